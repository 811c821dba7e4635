import { Entity, PrimaryColumn, Column } from 'typeorm';
import { TimestampColumn } from '../database/columns';
import type { PermissionMask } from '../identity/roles';

/** What is stored: a key is revoked or not. */
export type ApiKeyStatus = 'ACTIVE' | 'REVOKED';
/** What the API shows: EXPIRED is computed when the key is read (docs/api.md#api-key-object). */
export type ApiKeyDisplayStatus = ApiKeyStatus | 'EXPIRED';

@Entity({ name: 'api_keys' })
export class ApiKey {
  @PrimaryColumn({ type: 'varchar', length: 36 })
  id: string;

  @Column({ name: 'organization_id', type: 'varchar', length: 36 })
  organizationId: string;

  @Column({ name: 'user_id', type: 'varchar', length: 36 })
  userId: string;

  @Column({ type: 'varchar', length: 255 })
  label: string;

  /** HMAC-SHA256(pepper, secret) as 64 hex digits; the secret itself is never stored. */
  @Column({ name: 'secret_hash', type: 'varchar', length: 64 })
  secretHash: string;

  @Column({ type: 'varchar', length: 16 })
  status: ApiKeyStatus;

  /** The key's scopes as a permission bit mask (docs/adr/0017-key-scopes-as-a-permission-bit-mask.md). */
  @Column({ type: 'integer' })
  scopes: PermissionMask;

  /** When the key stops working; null: never. */
  @TimestampColumn({ name: 'expires_at', nullable: true })
  expiresAt: Date | null;

  @TimestampColumn({ name: 'created_at' })
  createdAt: Date;

  @TimestampColumn({ name: 'updated_at' })
  updatedAt: Date;

  @TimestampColumn({ name: 'last_used_at', nullable: true })
  lastUsedAt: Date | null;

  /** The client address of the use last_used_at records (docs/api.md#usage-fields). */
  @Column({ name: 'last_used_ip', type: 'varchar', length: 45, nullable: true })
  lastUsedIp: string | null;

  /** The User-Agent of that use, cleaned and cut to MAX_USER_AGENT_LENGTH characters (key-use.ts). */
  @Column({ name: 'last_used_user_agent', type: 'varchar', length: 255, nullable: true })
  lastUsedUserAgent: string | null;

  @TimestampColumn({ name: 'revoked_at', nullable: true })
  revokedAt: Date | null;

  /** The key a rotation replaced this one by; null when it was never rotated. */
  @Column({ name: 'replaced_by', type: 'varchar', length: 36, nullable: true })
  replacedBy: string | null;

  /**
   * The client addresses the key may be used from: normalized CIDRs, comma-separated (key-policies.ts); null: any
   * address (docs/api.md#allowlists-and-rate-limits).
   */
  @Column({ name: 'allowed_cidrs', type: 'text', nullable: true })
  allowedCidrs: string | null;

  /** At most this many requests per rate_limit_window_seconds, where Gatehouse sees them; both null: no limit. */
  @Column({ name: 'rate_limit_requests', type: 'integer', nullable: true })
  rateLimitRequests: number | null;

  @Column({ name: 'rate_limit_window_seconds', type: 'integer', nullable: true })
  rateLimitWindowSeconds: number | null;
}

/** A key that is not revoked is usable until its expires_at (exclusive): from that instant on it is EXPIRED. */
export function isExpired(expiresAtMs: number | null, nowMs: number): boolean {
  return expiresAtMs !== null && expiresAtMs <= nowMs;
}

/** The status the API shows at `nowMs`: REVOKED wins over EXPIRED. */
export function displayStatus(key: Pick<ApiKey, 'status' | 'expiresAt'>, nowMs: number): ApiKeyDisplayStatus {
  if (key.status === 'REVOKED') return 'REVOKED';
  return key.expiresAt !== null && isExpired(key.expiresAt.getTime(), nowMs) ? 'EXPIRED' : 'ACTIVE';
}
