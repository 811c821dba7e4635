import type { PermissionMask, Role } from './roles';

/**
 * Who is calling, as the Bearer guard established it for this request (a handler's `@Caller()`). It lives in identity (which
 * owns roles and their permissions) so that every feature module can name it without importing auth.
 */
export interface Principal {
  userId: string;
  organizationId: string;
  role: Role;
  /**
   * What this request may do: the role's permissions, and for an access token only those of them that its key's scopes
   * and its own `scope` also grant (docs/api.md#scopes).
   */
  permissions: PermissionMask;
  tokenUse: 'access' | 'session';
  /** The API key an access token was minted from. */
  credentialId?: string;
  /** That key's expiry (ms), null when it has none: a key it creates may not outlive it. */
  credentialExpiresAtMs?: number | null;
  /**
   * That key's client-address allowlist as stored (normalized CIDRs, comma-separated), read with the key; null: any
   * address (docs/api.md#allowlists-and-rate-limits).
   */
  credentialAllowedCidrs?: string | null;
  /** That key's rate limit, read with the key; null: none. Counted where Gatehouse sees each request (forward auth). */
  credentialRateLimit?: { requests: number; windowSeconds: number } | null;
  /** An access token of a person's grant (docs/mcp.md#grants): the grant's id; `permissions` are then none. */
  grantId?: string;
  /** That token's `scope`: its resource server's scopes, space-separated. */
  grantScope?: string;
}
