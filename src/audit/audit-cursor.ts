import { createHmac, hkdfSync, timingSafeEqual } from 'node:crypto';
import type { Micros } from './instants';

/** The last event of a page: its time and id, in list order. */
export interface AuditPosition {
  occurredAt: Micros;
  id: string;
}

const VERSION = 1;
const UUID_HEX = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const MAC_BYTES = 16;
/** version (1) | occurred_at in µs, signed 64-bit big-endian (8) | id (16) | MAC (16). */
const CURSOR_BYTES = 1 + 8 + 16 + MAC_BYTES;
/** HKDF labels: a key of its own, so that no other use of the secret can produce a valid cursor. */
const HKDF_SALT = 'gatehouse';
const HKDF_INFO = 'audit-events cursor v1';

/**
 * A position MAC'd with the organization and filters, so it only works for the list that issued it
 * (docs/api.md#audit-events, docs/adr/0018-audit-event-pages.md).
 */
export class AuditCursorCodec {
  private readonly key: Buffer;

  constructor(secret: string) {
    this.key = Buffer.from(hkdfSync('sha256', secret, HKDF_SALT, HKDF_INFO, 32));
  }

  encode(scope: string, position: AuditPosition): string {
    const body = Buffer.alloc(CURSOR_BYTES - MAC_BYTES);
    body.writeUInt8(VERSION, 0);
    body.writeBigInt64BE(BigInt(position.occurredAt), 1);
    Buffer.from(position.id.replaceAll('-', ''), 'hex').copy(body, 9);
    return Buffer.concat([body, this.mac(scope, body)]).toString('base64url');
  }

  /** Null for anything that is not a cursor this service issued for `scope`. */
  decode(scope: string, cursor: string): AuditPosition | null {
    if (!/^[A-Za-z0-9_-]+$/.test(cursor)) return null;
    const bytes = Buffer.from(cursor, 'base64url');
    // Exactly what encode writes: no padding, no trailing bits, no other length.
    if (bytes.length !== CURSOR_BYTES || bytes.toString('base64url') !== cursor) return null;
    const body = bytes.subarray(0, CURSOR_BYTES - MAC_BYTES);
    if (body.readUInt8(0) !== VERSION) return null;
    if (!timingSafeEqual(bytes.subarray(CURSOR_BYTES - MAC_BYTES), this.mac(scope, body))) return null;
    const occurredAt = Number(body.readBigInt64BE(1));
    const hex = body.subarray(9).toString('hex');
    const id = `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
    if (!Number.isSafeInteger(occurredAt) || !UUID_HEX.test(id)) return null;
    return { occurredAt, id };
  }

  private mac(scope: string, body: Buffer): Buffer {
    const scopeBytes = Buffer.from(scope, 'utf8');
    const length = Buffer.alloc(4);
    length.writeUInt32BE(scopeBytes.length);
    return createHmac('sha256', this.key)
      .update(length)
      .update(scopeBytes)
      .update(body)
      .digest()
      .subarray(0, MAC_BYTES);
  }
}
