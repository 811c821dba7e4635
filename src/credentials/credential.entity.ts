import { Column, PrimaryColumn } from 'typeorm';
import { TimestampColumn } from '../database/columns';
import type { PermissionMask } from '../identity/roles';

/** What is stored: a credential is revoked or not. */
export type CredentialStatus = 'ACTIVE' | 'REVOKED';
/** What the API shows: EXPIRED is computed when the credential is read (docs/api.md#api-key-object). */
export type CredentialDisplayStatus = CredentialStatus | 'EXPIRED';

/**
 * What every kind of credential has, whatever its table's other columns (docs/adr/0052-one-credential-core.md): an
 * owner in an organization, a status (each kind's words for active and revoked), its creation, last use and revocation.
 * A kind's entity extends Credential, or this alone when its table has no more of the shared columns (an MCP grant).
 */
export abstract class CredentialBase<Status extends string = string> {
  @PrimaryColumn({ type: 'varchar', length: 36 })
  id: string;

  @Column({ name: 'organization_id', type: 'varchar', length: 36 })
  organizationId: string;

  @Column({ name: 'user_id', type: 'varchar', length: 36 })
  userId: string;

  @Column({ type: 'varchar', length: 16 })
  status: Status;

  @TimestampColumn({ name: 'created_at' })
  createdAt: Date;

  /** The last successful use (docs/api.md#usage-fields). */
  @TimestampColumn({ name: 'last_used_at', nullable: true })
  lastUsedAt: Date | null;

  @TimestampColumn({ name: 'revoked_at', nullable: true })
  revokedAt: Date | null;
}

/**
 * What the kinds with every shared column have besides (API keys, workload identities): a label, scopes, an expiry,
 * the time of the last change and the address of the last use. Their lists, revocations and routes are the core's.
 */
export abstract class Credential extends CredentialBase<CredentialStatus> {
  @Column({ type: 'varchar', length: 255 })
  label: string;

  /** A permission bit mask (docs/adr/0017-key-scopes-as-a-permission-bit-mask.md). */
  @Column({ type: 'integer' })
  scopes: PermissionMask;

  /** When it stops working; null: never. */
  @TimestampColumn({ name: 'expires_at', nullable: true })
  expiresAt: Date | null;

  @TimestampColumn({ name: 'updated_at' })
  updatedAt: Date;

  /** The client address of the use last_used_at records. */
  @Column({ name: 'last_used_ip', type: 'varchar', length: 45, nullable: true })
  lastUsedIp: string | null;
}

/** Usable until expires_at (exclusive): from that instant on it is EXPIRED. */
export function isExpired(expiresAtMs: number | null, nowMs: number): boolean {
  return expiresAtMs !== null && expiresAtMs <= nowMs;
}

/** The status the API shows at `nowMs`: REVOKED wins over EXPIRED. */
export function displayStatus(
  credential: Pick<Credential, 'status' | 'expiresAt'>,
  nowMs: number,
): CredentialDisplayStatus {
  if (credential.status === 'REVOKED') return 'REVOKED';
  return credential.expiresAt !== null && isExpired(credential.expiresAt.getTime(), nowMs) ? 'EXPIRED' : 'ACTIVE';
}
