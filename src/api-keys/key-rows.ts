import { toDate } from '../database/columns';
import { ApiKey, ApiKeyStatus } from './api-key.entity';

/** Whose keys: every query on a user's keys is scoped by both. */
export interface OwnerIds {
  userId: string;
  organizationId: string;
}

export interface KeyPageQuery {
  limit: number;
  offset: number;
  includeRevoked: boolean;
}

/** One page of keys, newest first, and how many the list window holds (at most LIST_WINDOW). */
export interface KeyPage {
  keys: ApiKey[];
  totalCount: number;
}

/** A row of api_keys as the repositories' statements return it (their SQL: api-keys.repository.ts). */
export interface ApiKeyRow {
  id: string;
  organization_id: string;
  user_id: string;
  label: string;
  secret_hash: string;
  status: ApiKeyStatus;
  scopes: number | string;
  expires_at: Date | string | null;
  created_at: Date | string;
  updated_at: Date | string;
  last_used_at: Date | string | null;
  last_used_ip: string | null;
  last_used_user_agent: string | null;
  revoked_at: Date | string | null;
  replaced_by: string | null;
  allowed_cidrs: string | null;
  rate_limit_requests: number | string | null;
  rate_limit_window_seconds: number | string | null;
}

/** A row of a list page: a key and the owner's count, or only the count when the page is empty. */
export type ListRow = (ApiKeyRow | { [column in keyof ApiKeyRow]: null }) & { total_count: number | string };

/** The one mapper from an api_keys row to the entity. */
export function toApiKey(row: ApiKeyRow): ApiKey {
  return Object.assign(new ApiKey(), {
    id: row.id,
    organizationId: row.organization_id,
    userId: row.user_id,
    label: row.label,
    secretHash: row.secret_hash,
    status: row.status,
    scopes: Number(row.scopes),
    expiresAt: row.expires_at === null ? null : toDate(row.expires_at),
    createdAt: toDate(row.created_at),
    updatedAt: toDate(row.updated_at),
    lastUsedAt: row.last_used_at === null ? null : toDate(row.last_used_at),
    lastUsedIp: row.last_used_ip,
    lastUsedUserAgent: row.last_used_user_agent,
    revokedAt: row.revoked_at === null ? null : toDate(row.revoked_at),
    replacedBy: row.replaced_by,
    allowedCidrs: row.allowed_cidrs,
    rateLimitRequests: row.rate_limit_requests === null ? null : Number(row.rate_limit_requests),
    rateLimitWindowSeconds: row.rate_limit_window_seconds === null ? null : Number(row.rate_limit_window_seconds),
  });
}

/** A list page's rows as keys and their count: a page past the end is the count's row alone (no key columns). */
export function toPage(rows: ListRow[]): KeyPage {
  return {
    keys: rows.filter((row): row is ApiKeyRow & ListRow => row.id !== null).map(toApiKey),
    totalCount: Number(rows[0]?.total_count ?? 0),
  };
}

/** The window and page of a list statement: `limit` and `offset` of the page. */
export interface PageArgs {
  limit: number;
  offset: number;
}

export function page(query: KeyPageQuery): PageArgs {
  return { limit: query.limit, offset: query.offset };
}
