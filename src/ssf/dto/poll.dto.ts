import type { SchemaObject } from '@nestjs/swagger';
import { invalidArgument } from '../../common/errors';
import { UUID } from '../../common/uuid';

export const MAX_EVENTS = 1000;
export const DEFAULT_MAX_EVENTS = 100;

/** An RFC 8936 poll request, checked (docs/revocation-feed.md#delivery). */
export interface PollRequest {
  maxEvents: number;
  returnImmediately: boolean;
  ack: string[];
  setErrs: Array<[jti: string, error: { err: string; description?: string }]>;
}

/** An RFC 8936 poll answer: the SETs by jti, and whether more are pending. */
export interface PollAnswer {
  sets: Record<string, string>;
  moreAvailable: boolean;
}

export const POLL_BODY_SCHEMA: SchemaObject = {
  type: 'object',
  properties: {
    maxEvents: { type: 'integer', minimum: 1, maximum: MAX_EVENTS, default: DEFAULT_MAX_EVENTS },
    returnImmediately: { type: 'boolean', default: false },
    ack: { type: 'array', items: { type: 'string' }, maxItems: MAX_EVENTS },
    setErrs: { type: 'object', additionalProperties: { type: 'object' } },
  },
};

export const POLL_ANSWER_SCHEMA: SchemaObject = {
  type: 'object',
  properties: {
    sets: { type: 'object', additionalProperties: { type: 'string' }, description: 'jti -> compact SET' },
    moreAvailable: { type: 'boolean' },
  },
  required: ['sets', 'moreAvailable'],
};

export function pollRequest(body: unknown): PollRequest {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw invalidArgument();
  const b = body as Record<string, unknown>;
  const known = new Set(['maxEvents', 'returnImmediately', 'ack', 'setErrs']);
  if (Object.keys(b).some((name) => !known.has(name))) throw invalidArgument();
  const maxEvents = b.maxEvents ?? DEFAULT_MAX_EVENTS;
  if (typeof maxEvents !== 'number' || !Number.isInteger(maxEvents) || maxEvents < 1 || maxEvents > MAX_EVENTS) {
    throw invalidArgument();
  }
  const returnImmediately = b.returnImmediately ?? false;
  if (typeof returnImmediately !== 'boolean') throw invalidArgument();
  const ack = b.ack ?? [];
  if (!Array.isArray(ack) || ack.length > MAX_EVENTS || !ack.every((jti) => typeof jti === 'string')) {
    throw invalidArgument();
  }
  const setErrs = b.setErrs ?? {};
  if (typeof setErrs !== 'object' || setErrs === null || Array.isArray(setErrs)) throw invalidArgument();
  const errors = Object.entries(setErrs as Record<string, unknown>);
  if (errors.length > MAX_EVENTS) throw invalidArgument();
  for (const [, error] of errors) {
    const e = error as { err?: unknown; description?: unknown } | null;
    if (typeof e !== 'object' || e === null || typeof e.err !== 'string') throw invalidArgument();
    if (e.description !== undefined && typeof e.description !== 'string') throw invalidArgument();
  }
  return {
    maxEvents,
    returnImmediately,
    // An id that cannot be one of ours is nobody's delivery: ignored, as RFC 8936 lets a transmitter do.
    ack: ack.filter((jti) => UUID.test(jti)),
    setErrs: (errors as PollRequest['setErrs']).filter(([jti]) => UUID.test(jti)),
  };
}
