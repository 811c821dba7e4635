import { ApiProperty } from '@nestjs/swagger';
import { AUDIT_ACTIONS, AuditAction, AuditChanges, AuditEvent } from '../audit-event.entity';

/** A changed field's value: text (a label, an instant), a list (an allowlist), an object (a rate limit), or null. */
const CHANGE_VALUE = {
  nullable: true,
  oneOf: [
    { type: 'string' },
    { type: 'array', items: { type: 'string' } },
    { type: 'object', additionalProperties: true },
  ],
};

/** One changed field: its value before and after the change (never a secret). */
export class AuditChangeView {
  @ApiProperty({ ...CHANGE_VALUE, description: 'The value before the change (null: none)', example: 'ci deploys' })
  before: unknown;
  @ApiProperty({ ...CHANGE_VALUE, description: 'The value after the change (null: none)', example: 'ci releases' })
  after: unknown;
}

/** docs/api.md#audit-events: an event as the API shows it (never a secret: none is stored). */
export class AuditEventView {
  @ApiProperty({ format: 'uuid' })
  id: string;
  @ApiProperty({ enum: AUDIT_ACTIONS })
  action: AuditAction;
  @ApiProperty({
    type: String,
    nullable: true,
    description:
      'api_key.revoked: user, admin, member_removed, exposed or rotated; token.exchange_failed: why it was refused; else null',
  })
  reason: string | null;
  @ApiProperty({ format: 'date-time' })
  occurred_at: string;
  @ApiProperty({ type: String, format: 'uuid', nullable: true, description: 'The acting user; null when none' })
  actor_user_id: string | null;
  @ApiProperty({
    type: String,
    format: 'uuid',
    nullable: true,
    description: 'The API key behind the access token (or the exchange) the actor used',
  })
  actor_api_key_id: string | null;
  @ApiProperty({
    type: String,
    nullable: true,
    description: "The acting user's e-mail address",
    example: 'dev@acme.test',
  })
  actor_email: string | null;
  @ApiProperty({
    type: String,
    enum: [
      'api_key',
      'notification_integration',
      'organization',
      'user',
      'trusted_issuer',
      'webhook',
      'workload_identity',
      'grant',
    ],
    nullable: true,
  })
  target_type: string | null;
  @ApiProperty({ type: String, format: 'uuid', nullable: true })
  target_id: string | null;
  @ApiProperty({ type: String, nullable: true, description: "target_type user: that user's e-mail address" })
  target_email: string | null;
  @ApiProperty({
    type: String,
    nullable: true,
    description:
      'target_type api_key: the key\'s label ("" when it has none); null for other targets or a key not found',
  })
  target_label: string | null;
  @ApiProperty({
    type: String,
    format: 'uuid',
    nullable: true,
    description: 'api_key.rotated: the key the new one (target_id) replaces',
  })
  previous_api_key_id: string | null;
  @ApiProperty({
    type: String,
    format: 'date-time',
    nullable: true,
    description: "api_key.rotated with a grace period: the replaced key's new expires_at (the grace's end)",
  })
  previous_api_key_expires_at: string | null;
  @ApiProperty({ type: String, nullable: true, description: 'The client address the request came from' })
  client_ip: string | null;
  @ApiProperty({ type: String, nullable: true, description: 'X-Request-Id of the request' })
  request_id: string | null;
  @ApiProperty({
    type: 'object',
    nullable: true,
    additionalProperties: { $ref: '#/components/schemas/AuditChangeView' },
    description:
      'What the change changed, by field, each with its value before and after: api_key.updated (label, ' +
      'allowed_cidrs, rate_limit), webhook.secret_rotated (previous_secret_expires_at); null for other actions',
    example: { label: { before: 'ci deploys', after: 'ci releases' } },
  })
  changes: AuditChanges | null;

  static from(
    event: AuditEvent,
    emails: ReadonlyMap<string, string> = new Map(),
    labels: ReadonlyMap<string, string> = new Map(),
  ): AuditEventView {
    return {
      id: event.id,
      action: event.action,
      reason: event.reason,
      occurred_at: event.occurredAt.toISOString(),
      actor_user_id: event.actorUserId,
      actor_api_key_id: event.actorApiKeyId,
      actor_email: event.actorUserId === null ? null : (emails.get(event.actorUserId) ?? null),
      target_type: event.targetType,
      target_id: event.targetId,
      target_email:
        event.targetType === 'user' && event.targetId !== null ? (emails.get(event.targetId) ?? null) : null,
      target_label:
        event.targetType === 'api_key' && event.targetId !== null ? (labels.get(event.targetId) ?? null) : null,
      previous_api_key_id: event.previousApiKeyId,
      previous_api_key_expires_at: event.previousApiKeyExpiresAt?.toISOString() ?? null,
      client_ip: event.clientIp,
      request_id: event.requestId,
      changes: event.changes,
    };
  }
}

export class AuditEventListResponse {
  @ApiProperty({ type: () => [AuditEventView], description: 'Newest first' })
  audit_events: AuditEventView[];
  @ApiProperty({
    type: String,
    nullable: true,
    description: 'Pass as cursor, with the same filters, for the next page; null on the last page',
  })
  next_cursor: string | null;
}
