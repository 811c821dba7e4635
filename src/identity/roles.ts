/** Roles and what each may do (docs/api.md#roles-and-permissions). */
export const ROLES = ['admin', 'member', 'viewer'] as const;
export type Role = (typeof ROLES)[number];

/** The permission catalogue: every list of permissions the API shows is in this order. */
export const PERMISSIONS = [
  'api_keys:create',
  'api_keys:read',
  'api_keys:revoke',
  'api_keys:manage',
  'audit:read',
  'integrations:read',
  'integrations:write',
  'members:read',
  'members:write',
  'organization:write',
  'webhooks:read',
  'webhooks:write',
  'workload_identities:create',
  'workload_identities:read',
  'workload_identities:revoke',
  'workload_identities:manage',
] as const;
export type Permission = (typeof PERMISSIONS)[number];

const ROLE_PERMISSIONS: Record<Role, ReadonlySet<Permission>> = {
  admin: new Set(PERMISSIONS),
  member: new Set<Permission>([
    'api_keys:create',
    'api_keys:read',
    'api_keys:revoke',
    'integrations:read',
    'workload_identities:create',
    'workload_identities:read',
    'workload_identities:revoke',
  ]),
  viewer: new Set<Permission>([
    'api_keys:read',
    'api_keys:revoke',
    'integrations:read',
    'workload_identities:read',
    'workload_identities:revoke',
  ]),
};

export function isRole(value: string): value is Role {
  return (ROLES as readonly string[]).includes(value);
}

export function isPermission(value: string): value is Permission {
  return (PERMISSIONS as readonly string[]).includes(value);
}

export function roleGrants(role: Role, permission: Permission): boolean {
  return ROLE_PERMISSIONS[role].has(permission);
}

/** The role's permissions, in catalogue order. */
export function rolePermissions(role: Role): Permission[] {
  return PERMISSIONS.filter((permission) => ROLE_PERMISSIONS[role].has(permission));
}

/** Permissions as a bit mask: a check is one AND (docs/adr/0017-key-scopes-as-a-permission-bit-mask.md). */
export type PermissionMask = number;

/** Each permission's bit, stored in api_keys.scopes: a bit never changes meaning (new permissions take free bits). */
export const PERMISSION_BITS: Readonly<Record<Permission, number>> = {
  'api_keys:create': 1 << 0,
  'api_keys:read': 1 << 1,
  'api_keys:revoke': 1 << 2,
  'api_keys:manage': 1 << 3,
  'audit:read': 1 << 4,
  'integrations:read': 1 << 5,
  'integrations:write': 1 << 6,
  'organization:write': 1 << 7,
  'webhooks:read': 1 << 8,
  'webhooks:write': 1 << 9,
  'workload_identities:create': 1 << 10,
  'workload_identities:read': 1 << 11,
  'workload_identities:revoke': 1 << 12,
  'workload_identities:manage': 1 << 13,
  'members:read': 1 << 14,
  'members:write': 1 << 15,
};

/** Every permission of the catalogue. */
export const ALL_PERMISSIONS: PermissionMask = permissionMask(PERMISSIONS);

/** A new key's scopes when none are named (docs/api.md#scopes): management permissions only when asked for. */
export const DEFAULT_KEY_SCOPES: PermissionMask = permissionMask([
  'api_keys:read',
  'audit:read',
  'integrations:read',
  'integrations:write',
]);

const ROLE_MASKS: Readonly<Record<Role, PermissionMask>> = {
  admin: permissionMask(ROLE_PERMISSIONS.admin),
  member: permissionMask(ROLE_PERMISSIONS.member),
  viewer: permissionMask(ROLE_PERMISSIONS.viewer),
};

export function permissionMask(permissions: Iterable<Permission>): PermissionMask {
  let mask = 0;
  for (const permission of permissions) mask |= PERMISSION_BITS[permission];
  return mask;
}

/** The role's permissions as a mask (a constant per role). */
export function roleMask(role: Role): PermissionMask {
  return ROLE_MASKS[role];
}

export function maskGrants(mask: PermissionMask, permission: Permission): boolean {
  return (mask & PERMISSION_BITS[permission]) !== 0;
}

/** The mask's permissions, in catalogue order; bits of no known permission are left out. */
export function maskPermissions(mask: PermissionMask): Permission[] {
  return PERMISSIONS.filter((permission) => (mask & PERMISSION_BITS[permission]) !== 0);
}

/** Each mask's scope string, made the first time it is asked for: the exchange builds none per token after that. */
const SCOPE_STRINGS: Array<string | undefined> = new Array<string | undefined>(ALL_PERMISSIONS + 1);

/** The mask's permissions as an OAuth `scope` string: names in catalogue order, one space apart. */
export function scopeString(mask: PermissionMask): string {
  const known = mask & ALL_PERMISSIONS;
  return (SCOPE_STRINGS[known] ??= maskPermissions(known).join(' '));
}

/** A token's `scope` claim as a mask; names this version does not know grant nothing. */
export function scopeClaimMask(scope: string): PermissionMask {
  let mask = 0;
  for (const name of scope.split(' ')) if (isPermission(name)) mask |= PERMISSION_BITS[name];
  return mask;
}
