import { randomBytes } from 'node:crypto';
import { crc32 } from 'node:zlib';

/**
 * API key values (docs/api.md): `<env>.<key id>.<secret>.<checksum>` env the deployment's environment segment, 1-16 of
 * [a-z0-9] key id the key's UUID as 32 lower-case hex digits (an indexed lookup) secret 32 random bytes, unpadded
 * base64url (43 characters) checksum CRC-32 (IEEE, as zlib computes it) of `<env>.<key id>.<secret>`, 8 lower-case hex
 * A mistyped, truncated or foreign-environment key fails `parse` without touching the database, and a secret scanner
 * can verify a found key offline.
 */
export interface ParsedApiKey {
  /** Dashed UUID, as stored. */
  keyId: string;
  secret: string;
}

const SHAPE = /^([a-z0-9]{1,16})\.([0-9a-f]{32})\.([A-Za-z0-9_-]{43})\.([0-9a-f]{8})$/;
const SECRET_BYTES = 32;

function checksum(body: string): string {
  return crc32(body).toString(16).padStart(8, '0');
}

function hexToUuid(hex: string): string {
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

export class ApiKeyCodec {
  constructor(private readonly environment: string) {}

  static newSecret(): string {
    return randomBytes(SECRET_BYTES).toString('base64url');
  }

  format(keyId: string, secret: string): string {
    const body = `${this.environment}.${keyId.replace(/-/g, '').toLowerCase()}.${secret}`;
    return `${body}.${checksum(body)}`;
  }

  /** The key's parts, or null when the value is not a well-formed key of this environment. */
  parse(value: string): ParsedApiKey | null {
    const match = SHAPE.exec(value);
    if (match === null) return null;
    const [, environment, hexId, secret, sum] = match;
    if (environment !== this.environment) return null;
    if (checksum(value.slice(0, value.length - 9)) !== sum) return null;
    // 43 base64url characters carry 258 bits: the canonical encoding of 32 bytes has the last two
    // bits zero. A non-canonical spelling is not a key we issued.
    if (Buffer.from(secret, 'base64url').toString('base64url') !== secret) return null;
    return { keyId: hexToUuid(hexId), secret };
  }
}
