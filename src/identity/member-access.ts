import type { Role } from './roles';

/**
 * The `member_access` view identity publishes (migration 1764200000000): other modules join it by (organization_id,
 * user_id) in their hot-path queries. Its columns are the contract; identity's tables may change.
 */
export const MEMBER_ACCESS_VIEW = 'member_access';

/** The columns a query selects from the view (null when a LEFT JOIN found no membership). */
export interface MemberAccessColumns {
  role: Role | null;
  access_token_lifetime: number | string | null;
}

/** What the hot paths need to know about a user inside one organization. */
export interface MembershipAccess {
  role: Role;
  accessTokenLifetime: number;
}

/** The view's columns as a MembershipAccess, or null when there is no membership. */
export function toMembershipAccess(row: MemberAccessColumns): MembershipAccess | null {
  if (row.role === null || row.access_token_lifetime === null) return null;
  return { role: row.role, accessTokenLifetime: Number(row.access_token_lifetime) };
}

/** What a session-token request needs: the role, and the earliest `iat` still valid. */
export interface SessionAccess {
  role: Role;
  /**
   * Session tokens with an earlier `iat` (seconds) are refused: those of an earlier membership, and
   * those of the second of a sign-out or before (docs/adr/0025-session-sign-out.md).
   */
  minIssuedAt: number;
}
