import { Permission, PERMISSION_BITS, PERMISSIONS, roleGrants, ROLES, scopeClaimMask, scopeString } from './roles';

/**
 * The permissions of webhooks and workload identities took over routes that api_keys:* gated
 * (docs/adr/0052-one-credential-core.md#permissions): each role holds a successor exactly when it holds the older one.
 */
const SUCCEEDED: ReadonlyArray<[older: Permission, newer: Permission]> = [
  ['api_keys:create', 'workload_identities:create'],
  ['api_keys:read', 'workload_identities:read'],
  ['api_keys:revoke', 'workload_identities:revoke'],
  ['api_keys:manage', 'workload_identities:manage'],
  ['api_keys:manage', 'webhooks:read'],
  ['api_keys:manage', 'webhooks:write'],
];

describe('roles and permissions', () => {
  it.each(ROLES.flatMap((role) => SUCCEEDED.map(([older, newer]) => [role, older, newer] as const)))(
    '%s holds %s exactly when it held %s',
    (role, older, newer) => {
      expect(roleGrants(role, newer)).toBe(roleGrants(role, older));
    },
  );

  it('gives every permission its own bit, the first eight as they always were', () => {
    const bits = PERMISSIONS.map((permission) => PERMISSION_BITS[permission]);
    expect(new Set(bits).size).toBe(PERMISSIONS.length);
    const first: Permission[] = [
      'api_keys:create',
      'api_keys:read',
      'api_keys:revoke',
      'api_keys:manage',
      'audit:read',
      'integrations:read',
      'integrations:write',
      'organization:write',
    ];
    expect(first.map((permission) => PERMISSION_BITS[permission])).toEqual([1, 2, 4, 8, 16, 32, 64, 128]);
  });

  it('writes and reads a scope string in catalogue order, the new names included', () => {
    const mask = scopeClaimMask('webhooks:write api_keys:read workload_identities:manage unknown');
    expect(scopeString(mask)).toBe('api_keys:read webhooks:write workload_identities:manage');
    expect(scopeString(mask)).toBe(scopeString(mask));
  });
});
