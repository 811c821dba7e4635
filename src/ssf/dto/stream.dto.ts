import { ApiProperty, ApiPropertyOptional, type SchemaObject } from '@nestjs/swagger';
import { IsOptional, IsString, MaxLength } from 'class-validator';
import { invalidArgument } from '../../common/errors';

/** The only delivery method (RFC 8936 poll). */
export const POLL_DELIVERY = 'urn:ietf:rfc:8936';
export const MAX_DESCRIPTION_LENGTH = 200;
/** A receiver names at most this many event types (it receives both kinds whatever it names). */
const MAX_EVENTS_REQUESTED = 50;

/** POST /ssf/stream's body, checked: SSF 1.0 stream creation, poll delivery only. */
export interface CreateStreamRequest {
  description: string | null;
}

export const CREATE_STREAM_BODY_SCHEMA: SchemaObject = {
  type: 'object',
  properties: {
    delivery: {
      type: 'object',
      properties: { method: { type: 'string', enum: [POLL_DELIVERY] } },
      required: ['method'],
    },
    events_requested: { type: 'array', items: { type: 'string' }, maxItems: MAX_EVENTS_REQUESTED },
    description: { type: 'string', maxLength: MAX_DESCRIPTION_LENGTH },
  },
};

/** SSF 1.0 stream configuration, as the stream routes answer it. */
export const STREAM_SCHEMA: SchemaObject = {
  type: 'object',
  properties: {
    stream_id: { type: 'string' },
    iss: { type: 'string' },
    aud: { type: 'string' },
    delivery: {
      type: 'object',
      properties: { method: { type: 'string', enum: [POLL_DELIVERY] }, endpoint_url: { type: 'string' } },
      required: ['method', 'endpoint_url'],
    },
    events_supported: { type: 'array', items: { type: 'string' } },
    events_requested: { type: 'array', items: { type: 'string' } },
    events_delivered: { type: 'array', items: { type: 'string' } },
    description: { type: 'string' },
  },
  required: ['stream_id', 'iss', 'aud', 'delivery', 'events_supported', 'events_requested', 'events_delivered'],
};

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

export function createStreamRequest(body: unknown): CreateStreamRequest {
  const b = body ?? {};
  if (!isObject(b)) throw invalidArgument();
  if (Object.keys(b).some((name) => !['delivery', 'events_requested', 'description'].includes(name))) {
    throw invalidArgument();
  }
  if (b.delivery !== undefined) {
    const { delivery } = b;
    if (!isObject(delivery) || Object.keys(delivery).some((name) => name !== 'method')) throw invalidArgument();
    if (delivery.method !== POLL_DELIVERY) throw invalidArgument();
  }
  const requested = b.events_requested;
  if (requested !== undefined) {
    if (!Array.isArray(requested) || requested.length > MAX_EVENTS_REQUESTED) throw invalidArgument();
    if (!requested.every((type) => typeof type === 'string' && type.length <= 256)) throw invalidArgument();
  }
  const { description } = b;
  if (description === undefined) return { description: null };
  // Characters as PostgreSQL's varchar counts them; NUL cannot be stored.
  if (typeof description !== 'string' || [...description].length > MAX_DESCRIPTION_LENGTH) throw invalidArgument();
  if (description.includes('\u0000')) throw invalidArgument();
  return { description };
}

/** GET /ssf/stream: the default stream, or with `stream_id` one of the caller's streams. */
export class StreamQuery {
  @ApiPropertyOptional({ description: "A stream's id; without it, the resource server's default stream" })
  @IsOptional()
  @IsString()
  @MaxLength(64)
  stream_id?: string;
}

/** DELETE /ssf/stream: the stream to delete. */
export class DeleteStreamQuery {
  @ApiProperty({ description: 'The id of a stream made with POST /ssf/stream' })
  @IsString()
  @MaxLength(64)
  stream_id: string;
}
