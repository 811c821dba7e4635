/**
 * The operations of the key-lifecycle contract (docs/api.md: scopes, expiry, rotation,
 * organization keys, the audit log, organization settings) typed in openapi-typescript's shape,
 * for the routes and fields that this server's OpenAPI document (client/schema.d.ts) does not
 * describe yet. They win over the generated types for the paths they name.
 *
 * When `npm run client:generate` brings a path below into client/schema.d.ts, delete its entry
 * here: the generated types take over, and the compiler shows any difference from this contract.
 * When none is left, ConsolePaths is the generated `paths` (docs/adr/0022-typed-client.md).
 */
import type { components, paths } from '../../../client';

type ErrorBody = components['schemas']['ErrorBody'];
type Json<T> = { headers: { [name: string]: unknown }; content: { 'application/json': T } };
type Errors<S extends number> = { [K in S]: Json<ErrorBody> };
type NoParameters = { query?: never; header?: never; path?: never; cookie?: never };
type IdPath = { query?: never; header?: never; path: { id: string }; cookie?: never };
type Body<T> = { content: { 'application/json': T } };

/** The permission catalogue, in catalogue order (docs/api.md#roles-and-permissions). */
export type Permission =
  | 'api_keys:create'
  | 'api_keys:read'
  | 'api_keys:revoke'
  | 'api_keys:manage'
  | 'audit:read'
  | 'integrations:read'
  | 'integrations:write'
  | 'organization:write';

export type ApiKeyStatus = 'ACTIVE' | 'REVOKED' | 'EXPIRED';

/** An API key record of the contract (no secret). */
export interface ApiKey {
  id: string;
  organization_id: string;
  user_id: string;
  label: string;
  status: ApiKeyStatus;
  scopes: Permission[];
  created_at: string;
  updated_at: string;
  expires_at: string | null;
  last_used_at: string | null;
  last_used_ip: string | null;
  last_used_user_agent: string | null;
}

export interface CreatedApiKey {
  api_key: ApiKey & { value: string };
  opaque_key: string;
}

export interface ApiKeyPage {
  api_keys: ApiKey[];
  page: number;
  limit: number;
  total_count: number;
}

export type AuditAction =
  | 'api_key.created'
  | 'api_key.revoked'
  | 'api_key.rotated'
  | 'token.exchange_failed'
  | 'integration.created'
  | 'integration.updated'
  | 'integration.deleted'
  | 'organization.updated';

export interface AuditEvent {
  id: string;
  action: AuditAction;
  reason: string | null;
  occurred_at: string;
  actor_user_id: string | null;
  actor_api_key_id: string | null;
  target_type: string | null;
  target_id: string | null;
  previous_api_key_id: string | null;
  client_ip: string | null;
  request_id: string | null;
}

export interface OrganizationSettings {
  id: string;
  name: string;
  access_token_lifetime: number;
  max_key_lifetime_days: number | null;
}

type PageQuery = { page?: number; limit?: number; include_revoked?: boolean };

export interface PendingPaths {
  '/v1/user-api-keys': {
    parameters: NoParameters;
    get: {
      parameters: { query?: PageQuery; header?: never; path?: never; cookie?: never };
      requestBody?: never;
      responses: { 200: Json<ApiKeyPage> } & Errors<400 | 401 | 403 | 503>;
    };
    post: {
      parameters: NoParameters;
      requestBody?: Body<{ label?: string; scopes?: Permission[]; expires_at?: string | null }>;
      responses: { 201: Json<CreatedApiKey> } & Errors<400 | 401 | 403 | 413 | 503>;
    };
  };
  '/v1/user-api-keys/{id}': {
    parameters: NoParameters;
    get: {
      parameters: IdPath;
      requestBody?: never;
      responses: { 200: Json<{ api_key: ApiKey }> } & Errors<400 | 401 | 403 | 404 | 503>;
    };
    delete: {
      parameters: IdPath;
      requestBody?: never;
      responses: { 200: Json<{ api_key: ApiKey }> } & Errors<400 | 401 | 403 | 404 | 503>;
    };
  };
  '/v1/user-api-keys/{id}/rotate': {
    parameters: NoParameters;
    post: {
      parameters: IdPath;
      requestBody?: Body<{ grace_period_seconds?: number; expires_at?: string | null }>;
      responses: { 201: Json<CreatedApiKey & { previous_api_key: ApiKey }> } & Errors<400 | 401 | 403 | 404 | 503>;
    };
  };
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
  '/v1/audit-events': {
    parameters: NoParameters;
    get: {
      parameters: {
        query?: {
          action?: AuditAction;
          actor_user_id?: string;
          target_id?: string;
          since?: string;
          until?: string;
          limit?: number;
          cursor?: string;
        };
        header?: never;
        path?: never;
        cookie?: never;
      };
      requestBody?: never;
      responses: { 200: Json<{ audit_events: AuditEvent[]; next_cursor: string | null }> } & Errors<
        400 | 401 | 403 | 503
      >;
    };
  };
  '/v1/organization': {
    parameters: NoParameters;
    get: {
      parameters: NoParameters;
      requestBody?: never;
      responses: { 200: Json<{ organization: OrganizationSettings }> } & Errors<401 | 403 | 503>;
    };
    patch: {
      parameters: NoParameters;
      requestBody: Body<{ access_token_lifetime?: number; max_key_lifetime_days?: number | null }>;
      responses: { 200: Json<{ organization: OrganizationSettings }> } & Errors<400 | 401 | 403 | 503>;
    };
  };
}

/** What the console calls: the generated paths, with the pending contract over them. */
export type ConsolePaths = Omit<paths, keyof PendingPaths> & PendingPaths;
