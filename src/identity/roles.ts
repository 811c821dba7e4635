/** Roles and what each may do (docs/api.md, "Roles and permissions"). */
export const ROLES = ['admin', 'member', 'viewer'] as const;
export type Role = (typeof ROLES)[number];

export const PERMISSIONS = [
  'api_keys:create',
  'api_keys:read',
  'api_keys:revoke',
  'integrations:read',
  'integrations:write',
] as const;
export type Permission = (typeof PERMISSIONS)[number];

const ROLE_PERMISSIONS: Record<Role, ReadonlySet<Permission>> = {
  admin: new Set(PERMISSIONS),
  member: new Set<Permission>(['api_keys:create', 'api_keys:read', 'api_keys:revoke', 'integrations:read']),
  viewer: new Set<Permission>(['api_keys:read', 'integrations:read']),
};

export function isRole(value: string): value is Role {
  return (ROLES as readonly string[]).includes(value);
}

export function roleGrants(role: Role, permission: Permission): boolean {
  return ROLE_PERMISSIONS[role].has(permission);
}
