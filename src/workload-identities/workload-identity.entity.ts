import { Column, Entity } from 'typeorm';
import { Credential, CredentialDisplayStatus, CredentialStatus } from '../credentials/credential.entity';

/** What is stored: an identity is revoked or not (as a key). */
export type WorkloadIdentityStatus = CredentialStatus;
/** What the API shows: EXPIRED is computed when the identity is read. */
export type WorkloadIdentityDisplayStatus = CredentialDisplayStatus;

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
 * A credential presented as a subject token. The schema is the migration's; its own queries are in
 * workload-identities.repository.ts, the shared ones in the credential core.
 */
@Entity({ name: 'workload_identities' })
export class WorkloadIdentity extends Credential {
  /** The organization's trusted issuer (kind `workloads`) whose tokens it accepts. */
  @Column({ name: 'trusted_issuer_id', type: 'varchar', length: 36 })
  trustedIssuerId: string;

  /** That issuer's URL as it was at creation: compared exactly with the token's `iss`. */
  @Column({ type: 'varchar', length: 255 })
  issuer: string;

  /** Compared exactly with the token's `sub`: no wildcard. */
  @Column({ type: 'varchar', length: 1024 })
  subject: string;

  /** A JSON object of claim names (sorted) to strings, as text on both databases. */
  @Column({ type: 'text' })
  conditions: string;

  /** `client_id`: an exchange reaches it only by naming its id; `subject`: also without (docs/adr/0043). */
  @Column({ name: 'reachable_by', type: 'varchar', length: 16 })
  reachableBy: WorkloadIdentityReach;
}

export { displayStatus, isExpired } from '../credentials/credential.entity';
