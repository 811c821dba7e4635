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
  { name: 'members:read', description: 'list the organization’s members and invitations', management: true },
  {
    name: 'members:write',
    description: 'invite members, change their roles and remove them',
    management: true,
  },
  {
    name: 'organization:write',
    description: 'change the organization’s settings and single sign-on',
    management: true,
  },
  { name: 'webhooks:read', description: 'list the organization’s webhooks and their deliveries', management: true },
  { name: 'webhooks:write', description: 'add, test, enable and delete the organization’s webhooks', management: true },
  {
    name: 'workload_identities:create',
    description: 'create its owner’s workload identities',
    management: true,
  },
  // Not among a new key's defaults either: a key reads its owner's identities only when asked to (docs/api.md#scopes).
  {
    name: 'workload_identities:read',
    description: 'list and read its owner’s workload identities',
    management: true,
  },
  { name: 'workload_identities:revoke', description: 'revoke its owner’s workload identities', management: true },
  {
    name: 'workload_identities:manage',
    description: 'list and revoke every workload identity of the organization',
    management: true,
  },
];

/**
 * What a new key gets when the request names no scopes: the non-management permissions the
 * creator has. Management permissions are on a key only when asked for (docs/api.md).
 */
export function defaultScopes(granted: readonly Permission[]): Permission[] {
  return PERMISSIONS.filter((p) => !p.management && granted.includes(p.name)).map((p) => p.name);
}
