/** Every field of a key record (docs/api.md#api-key-object), sorted: never `value`, never a hash. */
export const KEY_RECORD_FIELDS: readonly string[] = [
  'allowed_cidrs',
  'created_at',
  'expires_at',
  'id',
  'label',
  'last_used_at',
  'last_used_ip',
  'last_used_user_agent',
  'organization_id',
  'rate_limit',
  'replaced_by',
  'revoked_at',
  'scopes',
  'status',
  'updated_at',
  'user_id',
];

/**
 * Every permission, in catalogue order (docs/api.md#roles-and-permissions), written out again here so
 * the tests do not share the service's table. An admin has all of them.
 */
export const PERMISSION_CATALOGUE: readonly string[] = [
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
];
