import { AppError } from '../common/errors';
import type { CredentialKind, CredentialRow } from '../credentials/credential-kind';
import { credentialFields } from '../credentials/credentials.repository';
import { ApiKey } from './api-key.entity';

/** A row of api_keys as the repositories' statements return it (their SQL: api-keys.repository.ts). */
export interface ApiKeyRow extends CredentialRow {
  secret_hash: string;
  last_used_user_agent: string | null;
  replaced_by: string | null;
  allowed_cidrs: string | null;
  rate_limit_requests: number | string | null;
  rate_limit_window_seconds: number | string | null;
}

/** The columns of ApiKeyRow, which toApiKey maps. */
export const COLUMNS = `id, organization_id, user_id, label, secret_hash, status, scopes, expires_at, created_at, updated_at,
  last_used_at, last_used_ip, last_used_user_agent, revoked_at, replaced_by, allowed_cidrs, rate_limit_requests,
  rate_limit_window_seconds`;

/** The one mapper from an api_keys row to the entity. */
export function toApiKey(row: ApiKeyRow): ApiKey {
  return Object.assign(new ApiKey(), credentialFields(row), {
    secretHash: row.secret_hash,
    lastUsedUserAgent: row.last_used_user_agent,
    replacedBy: row.replaced_by,
    allowedCidrs: row.allowed_cidrs,
    rateLimitRequests: row.rate_limit_requests === null ? null : Number(row.rate_limit_requests),
    rateLimitWindowSeconds: row.rate_limit_window_seconds === null ? null : Number(row.rate_limit_window_seconds),
  });
}

/** The API key as a kind of credential (docs/adr/0052-one-credential-core.md). */
export const API_KEY_KIND: CredentialKind<ApiKey, ApiKeyRow> = {
  name: 'api_key',
  revokedAction: 'api_key.revoked',
  table: 'api_keys',
  columns: COLUMNS,
  toEntity: toApiKey,
  // migration 1764810000000
  organizationIndexes: { active: 'api_keys_org_active', all: 'api_keys_org_newest' },
  ownerLockClass: 0x61706b79,
  keepsUserAgent: true,
  notFound: () => new AppError('api_key_not_found'),
};
