import { Column, Entity, PrimaryColumn } from 'typeorm';

/** The ways a credential is used that usage over time counts (docs/api.md#usage-over-time). */
export const USAGE_CHANNELS = ['key_exchange', 'oauth_token', 'forward_auth', 'introspection'] as const;
/**
 * `key_exchange`: POST /v1/token; `oauth_token`: POST /oauth/token (client credentials, token exchange);
 * `forward_auth`: /v1/forward-auth; `introspection`: POST /oauth/introspect.
 */
export type UsageChannel = (typeof USAGE_CHANNELS)[number];

/** One credential's uses in one channel during one period (a minute, or an hour). */
abstract class CredentialUsage {
  @PrimaryColumn({ name: 'credential_id', type: 'varchar', length: 36 })
  credentialId: string;

  /** The period's first minute, in whole minutes since the Unix epoch (UTC). */
  @PrimaryColumn({ type: 'integer' })
  minute: number;

  @PrimaryColumn({ type: 'varchar', length: 16 })
  channel: UsageChannel;

  /** The credential's kind (its audit target type): `api_key`, `workload_identity`. */
  @Column({ name: 'credential_kind', type: 'varchar', length: 32 })
  credentialKind: string;

  @Column({ name: 'organization_id', type: 'varchar', length: 36 })
  organizationId: string;

  @Column({ type: 'integer' })
  succeeded: number;

  /** Refused uses of the credential, once it was identified (docs/api.md#usage-over-time). */
  @Column({ type: 'integer' })
  refused: number;
}

/** Per minute, kept 30 days (CredentialUsageRetention). */
@Entity({ name: 'credential_usage_minutes' })
export class CredentialUsageMinute extends CredentialUsage {}

/** The same counts per hour (`minute` a multiple of 60), written with the minutes', kept as long. */
@Entity({ name: 'credential_usage_hours' })
export class CredentialUsageHour extends CredentialUsage {}
