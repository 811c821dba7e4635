import { Column, Entity, PrimaryColumn } from 'typeorm';
import { TimestampColumn } from '../database/columns';

export const AUDIT_ACTIONS = [
  'api_key.created',
  'api_key.revoked',
  'api_key.rotated',
  'api_key.updated',
  'token.exchange_failed',
  'integration.created',
  'integration.updated',
  'integration.deleted',
  'organization.updated',
  'console.signed_in',
  'console.sign_in_refused',
  'console.signed_out',
  'member.added',
  'member.role_changed',
  'member.removed',
  'member.invited',
  'member.invitation_revoked',
  'trusted_issuer.added',
  'trusted_issuer.removed',
  'trusted_issuer.updated',
  'webhook.created',
  'webhook.deleted',
  'webhook.disabled',
  'webhook.enabled',
  'webhook.secret_rotated',
  'workload_identity.created',
  'workload_identity.revoked',
  'workload_identity.exchanged',
  'grant.granted',
  'grant.refreshed',
  'grant.revoked',
  'oauth_client.created',
  'oauth_client.removed',
] as const;
export type AuditAction = (typeof AUDIT_ACTIONS)[number];

/** One field a change changed, as the API names it: its value before and after (never a secret). */
export interface AuditChange {
  before: unknown;
  after: unknown;
}

/** What a change changed, by field (`api_key.updated`, `webhook.secret_rotated`); only the fields that differ. */
export type AuditChanges = Record<string, AuditChange>;

/** Never holds a secret: key and integration ids, never key values. */
@Entity({ name: 'audit_events' })
export class AuditEvent {
  @PrimaryColumn({ type: 'varchar', length: 36 })
  id: string;

  @TimestampColumn({ name: 'occurred_at' })
  occurredAt: Date;

  @Column({ type: 'varchar', length: 64 })
  action: AuditAction;

  /** Null when the organization is not known (e.g. an exchange with a malformed key). */
  @Column({ name: 'organization_id', type: 'varchar', length: 36, nullable: true })
  organizationId: string | null;

  @Column({ name: 'actor_user_id', type: 'varchar', length: 36, nullable: true })
  actorUserId: string | null;

  @Column({ name: 'actor_api_key_id', type: 'varchar', length: 36, nullable: true })
  actorApiKeyId: string | null;

  @Column({ name: 'target_type', type: 'varchar', length: 32, nullable: true })
  targetType:
    | 'api_key'
    | 'notification_integration'
    | 'organization'
    | 'user'
    | 'trusted_issuer'
    | 'webhook'
    | 'workload_identity'
    | 'grant'
    | 'oauth_client'
    | null;

  @Column({ name: 'target_id', type: 'varchar', length: 36, nullable: true })
  targetId: string | null;

  /** api_key.rotated: the key the new one replaces (the target is the new key). */
  @Column({ name: 'previous_api_key_id', type: 'varchar', length: 36, nullable: true })
  previousApiKeyId: string | null;

  /** api_key.rotated with a grace period: the replaced key's new expires_at (the grace's end); else null. */
  @TimestampColumn({ name: 'previous_api_key_expires_at', nullable: true })
  previousApiKeyExpiresAt: Date | null;

  /**
   * Why: a failed exchange's refusal (e.g. `revoked`), a revocation's cause (`user`, `admin`, `member_removed`,
   * `exposed`; a workload identity's too); member.added: `admin`, `sso` or `invitation`; member.invited and
   * member.invitation_revoked: the role; member.role_changed: the new role;
   * workload_identity.exchanged: the subject token's `sub`, as long as a workload identity's subject.
   */
  @Column({ type: 'varchar', length: 1024, nullable: true })
  reason: string | null;

  @Column({ name: 'client_ip', type: 'varchar', length: 64, nullable: true })
  clientIp: string | null;

  @Column({ name: 'request_id', type: 'varchar', length: 128, nullable: true })
  requestId: string | null;

  /** What the change changed (migration 1765920000000), as JSON; null for actions that record none. */
  @Column({
    type: 'text',
    nullable: true,
    transformer: { to: JSON.stringify, from: (value: string) => JSON.parse(value) as AuditChanges },
  })
  changes: AuditChanges | null;
}
