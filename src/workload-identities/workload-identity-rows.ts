import { LIST_WINDOW, Page } from '../common/pagination';
import { toDate } from '../database/columns';
import {
  WorkloadConditions,
  WorkloadIdentity,
  WorkloadIdentityReach,
  WorkloadIdentityStatus,
} from './workload-identity.entity';

/** Whose identities: every query on a user's identities is scoped by both. */
export interface OwnerIds {
  userId: string;
  organizationId: string;
}

/** A page's window: `limit` rows from `offset`, ACTIVE ones only unless `includeRevoked`. */
export interface IdentityPageQuery {
  limit: number;
  offset: number;
  includeRevoked: boolean;
}

/** One page of identities, newest first, and how many the list window holds (at most LIST_WINDOW). */
export interface IdentityPage {
  identities: WorkloadIdentity[];
  totalCount: number;
}

/** A row of workload_identities as the repositories' statements return it. */
export interface WorkloadIdentityRow {
  id: string;
  organization_id: string;
  user_id: string;
  trusted_issuer_id: string;
  issuer: string;
  label: string;
  subject: string;
  conditions: string;
  status: WorkloadIdentityStatus;
  reachable_by: WorkloadIdentityReach;
  scopes: number | string;
  expires_at: Date | string | null;
  created_at: Date | string;
  updated_at: Date | string;
  last_used_at: Date | string | null;
  last_used_ip: string | null;
  revoked_at: Date | string | null;
}

/** The columns of WorkloadIdentityRow, which toWorkloadIdentity maps. */
export const COLUMNS = `id, organization_id, user_id, trusted_issuer_id, issuer, label, subject, conditions, status,
  reachable_by, scopes, expires_at, created_at, updated_at, last_used_at, last_used_ip, revoked_at`;

/** A row of a list page: an identity and the count, or only the count when the page is empty. */
export type ListRow = (WorkloadIdentityRow | { [column in keyof WorkloadIdentityRow]: null }) & {
  total_count: number | string;
};

export type PageArgs = Pick<IdentityPageQuery, 'limit' | 'offset'>;

/** The one mapper from a workload_identities row to the entity. */
export function toWorkloadIdentity(row: WorkloadIdentityRow): WorkloadIdentity {
  return Object.assign(new WorkloadIdentity(), {
    id: row.id,
    organizationId: row.organization_id,
    userId: row.user_id,
    trustedIssuerId: row.trusted_issuer_id,
    issuer: row.issuer,
    label: row.label,
    subject: row.subject,
    conditions: row.conditions,
    status: row.status,
    reachableBy: row.reachable_by,
    scopes: Number(row.scopes),
    expiresAt: row.expires_at === null ? null : toDate(row.expires_at),
    createdAt: toDate(row.created_at),
    updatedAt: toDate(row.updated_at),
    lastUsedAt: row.last_used_at === null ? null : toDate(row.last_used_at),
    lastUsedIp: row.last_used_ip,
    revokedAt: row.revoked_at === null ? null : toDate(row.revoked_at),
  });
}

/** The stored conditions (a JSON object as text) as an object. */
export function conditionsOf(identity: Pick<WorkloadIdentity, 'conditions'>): WorkloadConditions {
  return JSON.parse(identity.conditions) as WorkloadConditions;
}

/** A list page's rows as identities and their count: a page past the end is the count's row alone. */
export function toPage(rows: ListRow[]): IdentityPage {
  return {
    identities: rows
      .filter((row): row is WorkloadIdentityRow & ListRow => row.id !== null)
      .map((row) => toWorkloadIdentity(row)),
    totalCount: Number(rows[0]?.total_count ?? 0),
  };
}

/** The page of `query` as the service returns it. */
export function pageOf<T>(items: T[], query: { page: number; limit: number }, totalCount: number): Page<T> {
  return { items, page: query.page, limit: query.limit, totalCount };
}

/** The window of page `page` of `limit` rows, cut at the list window (docs/api.md#conventions). */
export function windowOf(query: { page: number; limit: number; includeRevoked: boolean }): IdentityPageQuery {
  const offset = (query.page - 1) * query.limit;
  return {
    limit: Math.max(0, Math.min(query.limit, LIST_WINDOW - offset)),
    offset,
    includeRevoked: query.includeRevoked,
  };
}
