import { createHmac, timingSafeEqual } from 'node:crypto';

/** HMAC-SHA256 of the secret under the server-side pepper; only this is stored. */
export class SecretHasher {
  private readonly pepper: Buffer;

  constructor(pepper: string) {
    this.pepper = Buffer.from(pepper, 'utf8');
  }

  hash(secret: string): string {
    return createHmac('sha256', this.pepper).update(secret).digest('hex');
  }

  /** Constant-time comparison of a presented secret with a stored hash. */
  matches(secret: string, storedHash: string): boolean {
    const expected = Buffer.from(storedHash, 'hex');
    const actual = createHmac('sha256', this.pepper).update(secret).digest();
    return expected.length === actual.length && timingSafeEqual(expected, actual);
  }
}
