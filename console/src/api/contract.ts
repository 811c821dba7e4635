/**
 * The console's names for the API's types, from the generated document (client/schema.d.ts), and
 * the operations of the contract (docs/api.md) that this server's OpenAPI document does not
 * describe yet, typed in openapi-typescript's shape. Those win over the generated types for the
 * paths they name.
 *
 * When `npm run client:generate` brings a path or field below into client/schema.d.ts, delete its
 * entry here: the generated types take over, and the compiler shows any difference from this
 * contract. When none is left, ConsolePaths is the generated `paths` (docs/adr/0022-typed-client.md).
 */
import type { components, paths } from '../../../client';

type Schemas = components['schemas'];

/** The permission catalogue, in catalogue order (docs/api.md#roles-and-permissions). */
export type Permission = Schemas['ConsoleSessionResponse']['permissions'][number];
export type ApiKeyStatus = Schemas['ApiKeyView']['status'];

/**
 * Where a key was last used from (docs/api.md: last_used_ip, last_used_user_agent): not in the
 * generated document yet, so optional; the list shows them when the server sends them.
 */
export interface PendingKeyUsage {
  last_used_ip?: string | null;
  last_used_user_agent?: string | null;
}

/** An API key record (no secret). */
export type ApiKey = Schemas['ApiKeyView'] & PendingKeyUsage;
export type CreatedApiKey = Schemas['CreateApiKeyResponse'];
export type RotatedApiKey = Schemas['RotateApiKeyResponse'];
export type AuditEvent = Schemas['AuditEventView'];
export type AuditAction = AuditEvent['action'];
export type OrganizationSettings = Schemas['OrganizationView'];

type ErrorBody = Schemas['ErrorBody'];
type Json<T> = { headers: { [name: string]: unknown }; content: { 'application/json': T } };
type Errors<S extends number> = { [K in S]: Json<ErrorBody> };
type NoParameters = { query?: never; header?: never; path?: never; cookie?: never };
type IdPath = { query?: never; header?: never; path: { id: string }; cookie?: never };
type PageQuery = { page?: number; limit?: number; include_revoked?: boolean };
type ApiKeyPage = { api_keys: ApiKey[]; page: number; limit: number; total_count: number };

export interface PendingPaths {
  '/v1/organization/api-keys': {
    parameters: NoParameters;
    get: {
      parameters: { query?: PageQuery & { user_id?: string }; header?: never; path?: never; cookie?: never };
      requestBody?: never;
      responses: { 200: Json<ApiKeyPage> } & Errors<400 | 401 | 403 | 503>;
    };
  };
  '/v1/organization/api-keys/{id}': {
    parameters: NoParameters;
    delete: {
      parameters: IdPath;
      requestBody?: never;
      responses: { 200: Json<{ api_key: ApiKey }> } & Errors<400 | 401 | 403 | 404 | 503>;
    };
  };
}

/** What the console calls: the generated paths, with the pending contract over them. */
export type ConsolePaths = Omit<paths, keyof PendingPaths> & PendingPaths;
