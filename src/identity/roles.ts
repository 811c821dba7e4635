/** Roles and what each may do (docs/api.md#roles-and-permissions). */
export const ROLES = ['admin', 'member', 'viewer'] as const;
export type Role = (typeof ROLES)[number];

/**
 * The permission catalogue, in catalogue order: every list of permissions the API shows (a key's
 * `scopes`, a token's `scope`) is in this order.
 */
export const PERMISSIONS = [
  'api_keys:create',
  'api_keys:read',
  'api_keys:revoke',
  'api_keys:manage',
  'audit:read',
  'integrations:read',
  'integrations:write',
  'organization:write',
] as const;
export type Permission = (typeof PERMISSIONS)[number];

const ROLE_PERMISSIONS: Record<Role, ReadonlySet<Permission>> = {
  admin: new Set(PERMISSIONS),
  member: new Set<Permission>(['api_keys:create', 'api_keys:read', 'api_keys:revoke', 'integrations:read']),
  viewer: new Set<Permission>(['api_keys:read', 'api_keys:revoke', 'integrations:read']),
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
