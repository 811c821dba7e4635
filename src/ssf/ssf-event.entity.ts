import { Column, Entity, PrimaryColumn } from 'typeorm';
import { TimestampColumn } from '../database/columns';

/** The two CAEP events the feed carries (docs/revocation-feed.md#events). */
export const CREDENTIAL_CHANGE = 'https://schemas.openid.net/secevent/caep/event-type/credential-change';
export const TOKEN_CLAIMS_CHANGE = 'https://schemas.openid.net/secevent/caep/event-type/token-claims-change';
export const EVENT_TYPES = [CREDENTIAL_CHANGE, TOKEN_CLAIMS_CHANGE] as const;
export type EventType = (typeof EVENT_TYPES)[number];

/** One change, as every stream receives it: written in the transaction of the change (the outbox). */
@Entity({ name: 'ssf_events' })
export class SsfEvent {
  @PrimaryColumn({ type: 'varchar', length: 36 })
  id: string;

  @Column({ name: 'event_type', type: 'varchar', length: 128 })
  eventType: EventType;

  /** The SET's `sub_id`, as JSON text. */
  @Column({ type: 'text' })
  subject: string;

  /** The event's members (`events[type]`), as JSON text. */
  @Column({ type: 'text' })
  payload: string;

  @TimestampColumn({ name: 'occurred_at' })
  occurredAt: Date;
}

/** One event for one stream (a resource server): its id is the SET's `jti`; acknowledged once, then never again. */
@Entity({ name: 'ssf_deliveries' })
export class SsfDelivery {
  @PrimaryColumn({ type: 'varchar', length: 36 })
  id: string;

  @Column({ name: 'stream_id', type: 'varchar', length: 36 })
  streamId: string;

  @Column({ name: 'event_id', type: 'varchar', length: 36 })
  eventId: string;

  @TimestampColumn({ name: 'created_at' })
  createdAt: Date;

  @TimestampColumn({ name: 'acknowledged_at', nullable: true })
  acknowledgedAt: Date | null;

  /** RFC 8936 setErrs: the receiver's `{ err, description }` for this SET, as JSON text. */
  @Column({ type: 'text', nullable: true })
  error: string | null;
}
