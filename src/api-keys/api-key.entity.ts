import { Column, Entity } from 'typeorm';
import { Credential, CredentialDisplayStatus, CredentialStatus } from '../credentials/credential.entity';

/** What is stored: a key is revoked or not. */
export type ApiKeyStatus = CredentialStatus;
/** What the API shows: EXPIRED is computed when the key is read (docs/api.md#api-key-object). */
export type ApiKeyDisplayStatus = CredentialDisplayStatus;

/** An API key: a credential presented as a secret (docs/api.md#api-key-object). */
@Entity({ name: 'api_keys' })
export class ApiKey extends Credential {
  /** HMAC-SHA256(pepper, secret) as 64 hex digits; the secret itself is never stored. */
  @Column({ name: 'secret_hash', type: 'varchar', length: 64 })
  secretHash: string;

  /** The User-Agent of the last use, cleaned and cut to MAX_USER_AGENT_LENGTH characters (key-use.ts). */
  @Column({ name: 'last_used_user_agent', type: 'varchar', length: 255, nullable: true })
  lastUsedUserAgent: string | null;

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

export { displayStatus, isExpired } from '../credentials/credential.entity';
