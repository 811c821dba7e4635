import { Column, Entity, PrimaryColumn } from 'typeorm';
import { TimestampColumn } from '../database/columns';
import type { PermissionMask } from '../identity/roles';

/** What is stored: an identity is revoked or not (as a key). */
export type WorkloadIdentityStatus = 'ACTIVE' | 'REVOKED';
/** What the API shows: EXPIRED is computed when the identity is read. */
export type WorkloadIdentityDisplayStatus = WorkloadIdentityStatus | 'EXPIRED';

/**
 * How an exchange may reach an identity (docs/workload-identities.md#naming-the-identity): `client_id`, only by naming
 * its id (every identity created now); `subject`, also by its issuer and `sub` alone (those that existed before).
 */
export type WorkloadIdentityReach = 'client_id' | 'subject';

/** Exact matches on string claims of the subject token, by claim name (docs/workload-identities.md#conditions). */
export type WorkloadConditions = Readonly<Record<string, string>>;

/**
 * A workload identity (docs/workload-identities.md): a key without a secret. A token of its trusted issuer whose `sub`
 * is `subject` and whose claims meet every condition is exchanged for an access token of its owner, with its scopes.
 * The schema is the migration's; every query is in workload-identities.repository.ts.
 */
@Entity({ name: 'workload_identities' })
export class WorkloadIdentity {
  @PrimaryColumn({ type: 'varchar', length: 36 })
  id: string;

  @Column({ name: 'organization_id', type: 'varchar', length: 36 })
  organizationId: string;

  @Column({ name: 'user_id', type: 'varchar', length: 36 })
  userId: string;

  /** The organization's trusted issuer (kind `workloads`) whose tokens it accepts. */
  @Column({ name: 'trusted_issuer_id', type: 'varchar', length: 36 })
  trustedIssuerId: string;

  /** That issuer's URL as it was at creation: compared exactly with the token's `iss`. */
  @Column({ type: 'varchar', length: 255 })
  issuer: string;

  @Column({ type: 'varchar', length: 255 })
  label: string;

  /** Compared exactly with the token's `sub`: no wildcard. */
  @Column({ type: 'varchar', length: 1024 })
  subject: string;

  /** A JSON object of claim names (sorted) to strings, as text on both databases. */
  @Column({ type: 'text' })
  conditions: string;

  @Column({ type: 'varchar', length: 16 })
  status: WorkloadIdentityStatus;

  /** `client_id`: an exchange reaches it only by naming its id; `subject`: also without (docs/adr/0043). */
  @Column({ name: 'reachable_by', type: 'varchar', length: 16 })
  reachableBy: WorkloadIdentityReach;

  /** As a key's: a permission bit mask (docs/adr/0017-key-scopes-as-a-permission-bit-mask.md). */
  @Column({ type: 'integer' })
  scopes: PermissionMask;

  @TimestampColumn({ name: 'expires_at', nullable: true })
  expiresAt: Date | null;

  @TimestampColumn({ name: 'created_at' })
  createdAt: Date;

  @TimestampColumn({ name: 'updated_at' })
  updatedAt: Date;

  /** The last exchange of one of its tokens. */
  @TimestampColumn({ name: 'last_used_at', nullable: true })
  lastUsedAt: Date | null;

  @Column({ name: 'last_used_ip', type: 'varchar', length: 45, nullable: true })
  lastUsedIp: string | null;

  @TimestampColumn({ name: 'revoked_at', nullable: true })
  revokedAt: Date | null;
}

/** Usable until expires_at (exclusive), as a key (api-keys/api-key.entity.ts). */
export function isExpired(expiresAtMs: number | null, nowMs: number): boolean {
  return expiresAtMs !== null && expiresAtMs <= nowMs;
}

/** The status the API shows at `nowMs`: REVOKED wins over EXPIRED. */
export function displayStatus(
  identity: Pick<WorkloadIdentity, 'status' | 'expiresAt'>,
  nowMs: number,
): WorkloadIdentityDisplayStatus {
  if (identity.status === 'REVOKED') return 'REVOKED';
  return identity.expiresAt !== null && isExpired(identity.expiresAt.getTime(), nowMs) ? 'EXPIRED' : 'ACTIVE';
}
