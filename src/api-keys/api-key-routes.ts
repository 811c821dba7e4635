import { credentialRoutes } from '../credentials/credential-routes';
import { ApiKeysRepository } from './api-keys.repository';
import { ApiKeyView } from './dto/api-key.view';

/**
 * The routes keys share with every credential (docs/adr/0052-one-credential-core.md): /v1/user-api-keys' list, read
 * and revocation, and organization key management (docs/api.md#organization-key-management), for admins.
 */
export const API_KEY_ROUTES = credentialRoutes({
  schema: 'ApiKey',
  tag: 'API keys',
  store: ApiKeysRepository,
  view: ApiKeyView,
  one: 'api_key',
  many: 'api_keys',
  permissions: { read: 'api_keys:read', revoke: 'api_keys:revoke', manage: 'api_keys:manage' },
  owner: {
    list: { summary: "List the caller's keys, newest first" },
    get: { summary: "Read one of the caller's keys (without its secret)" },
    revoke: { summary: 'Revoke a key at once and for good (idempotent)' },
    usage: {
      summary: "One of the caller's keys: its successful and refused uses over time, per minute, hour or day",
      description:
        'Per channel: POST /v1/token, POST /oauth/token, forward auth, introspection (docs/api.md#usage-over-time).',
    },
  },
  organization: {
    path: 'v1/organization/api-keys',
    controller: 'OrganizationApiKeysController',
    list: {
      summary: "List every member's keys in the caller's organization, newest first (never a secret)",
      description:
        "user_id or email narrows the list to one user's keys. Each key carries its owner's e-mail address. Paged as GET /v1/user-api-keys.",
    },
    revoke: {
      summary: "Revoke any key of the caller's organization at once and for good (idempotent)",
      description: "Recorded as api_key.revoked with reason admin. Another organization's key is 404.",
    },
    usage: {
      summary: "Any key of the caller's organization: its uses over time, as GET /v1/user-api-keys/{id}/usage",
      description: "Another organization's key is 404.",
    },
  },
});
