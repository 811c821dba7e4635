import type { Permission } from './api/contract';

/** The catalogue in its order, with what each lets a key do (docs/api.md#roles-and-permissions). */
export const PERMISSIONS: ReadonlyArray<{ name: Permission; description: string; management: boolean }> = [
  {
    name: 'api_keys:create',
    description: 'create its owner’s keys (and, with api_keys:revoke, rotate them)',
    management: true,
  },
  { name: 'api_keys:read', description: 'list and read its owner’s keys', management: false },
  { name: 'api_keys:revoke', description: 'revoke its owner’s keys', management: true },
  { name: 'api_keys:manage', description: 'list and revoke every key of the organization', management: true },
  { name: 'audit:read', description: 'read the audit log', management: false },
  { name: 'integrations:read', description: 'read integrations', management: false },
  { name: 'integrations:write', description: 'create, change and delete integrations', management: false },
  { name: 'organization:write', description: 'change the organization’s settings', management: true },
];

/**
 * What a new key gets when the request names no scopes: the non-management permissions the
 * creator has. Management permissions are on a key only when asked for (docs/api.md).
 */
export function defaultScopes(granted: readonly Permission[]): Permission[] {
  return PERMISSIONS.filter((p) => !p.management && granted.includes(p.name)).map((p) => p.name);
}
