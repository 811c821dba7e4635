import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * An authorization request checked by GET /oauth/authorize and carried to the consent page and back, signed, so that
 * nothing is stored before the person decides (docs/adr/0053-mcp-authorization-server.md). It holds no secret: the
 * code goes only to the redirect URI, and only the PKCE verifier's holder can redeem it.
 */
export interface AuthorizationRequest {
  clientId: string;
  redirectUri: string;
  state: string | null;
  codeChallenge: string;
  resource: string;
  scopes: string[];
  /** Until when the consent may be given (ms). */
  expiresAtMs: number;
}

/** Long enough to sign in (a one-time link, single sign-on) and decide. */
export const AUTHORIZATION_REQUEST_MS = 15 * 60_000;

export class AuthorizationRequestCodec {
  private readonly key: Buffer;

  constructor(pepper: string) {
    this.key = createHmac('sha256', pepper).update('gatehouse authorization request').digest();
  }

  encode(request: AuthorizationRequest): string {
    const payload = Buffer.from(JSON.stringify(request), 'utf8').toString('base64url');
    return `${payload}.${this.sign(payload)}`;
  }

  /** The request, or null when it is not one of ours or has expired. */
  decode(value: string, nowMs = Date.now()): AuthorizationRequest | null {
    const dot = value.indexOf('.');
    if (dot <= 0) return null;
    const payload = value.slice(0, dot);
    const given = Buffer.from(value.slice(dot + 1));
    const expected = Buffer.from(this.sign(payload));
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return null;
    const request = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as AuthorizationRequest;
    return request.expiresAtMs > nowMs ? request : null;
  }

  private sign(payload: string): string {
    return createHmac('sha256', this.key).update(payload).digest('base64url');
  }
}
