import { TEST_ISSUER } from './test-app';
import { createHmac, generateKeyPairSync, KeyObject } from 'node:crypto';
import jwt from 'jsonwebtoken';
import type { Response } from 'supertest';

/** ISO 8601 UTC with milliseconds and `Z` (docs/api.md, "General"). */
export const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
/** `<env>.<32 hex>.<43 base64url>.<8 hex>` (docs/api.md, "API keys"). */
export const KEY_VALUE = /^dev\.[0-9a-f]{32}\.[A-Za-z0-9_-]{43}\.[0-9a-f]{8}$/;

export const bearer = (token: string): Record<string, string> => ({ Authorization: `Bearer ${token}` });
export const apiKeyAuth = (value: string): Record<string, string> => ({ Authorization: `ApiKey ${value}` });

/**
 * The exact error body of docs/api.md#errors: `{code, message, reason}`, JSON, nothing else. The reason is a plain
 * string here, not the catalogue's type: a test says what a client reads.
 */
export function expectError(response: Response, status: number, code: string, message: string, reason: string): void {
  expect({ status: response.status, body: response.body }).toStrictEqual({ status, body: { code, message, reason } });
  expect(response.headers['content-type']).toBe('application/json; charset=utf-8');
}

/** 400 `invalid request parameters`: a failed body, query or path validation unless another reason is named. */
export function expectInvalidArgument(response: Response, reason = 'invalid_argument'): void {
  expectError(response, 400, 'INVALID_ARGUMENT', 'invalid request parameters', reason);
}

/** 401 of a Bearer-authenticated route (docs/api.md, "Access and session tokens"). */
export function expectBearerRejected(response: Response, reason = 'token_missing'): void {
  expectError(response, 401, 'UNAUTHENTICATED', 'user not authenticated', reason);
  expect(response.headers['www-authenticate']).toMatch(/^Bearer\b/);
}

/** 401 of POST /v1/token with one of the messages of docs/api.md, steps 1-6, and its reason. */
export function expectApiKeyRejected(response: Response, message: string, reason: string): void {
  expectError(response, 401, 'UNAUTHENTICATED', message, reason);
  expect(response.headers['www-authenticate']).toMatch(/^ApiKey\b/);
}

export interface DecodedJwt {
  header: Record<string, unknown>;
  payload: Record<string, unknown>;
}

/** Reads a JWT's header and claims without verifying (to assert what we issued). */
export function decodeJwt(token: string): DecodedJwt {
  const [header, payload] = token.split('.');
  return {
    header: JSON.parse(Buffer.from(header, 'base64url').toString('utf8')),
    payload: JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')),
  };
}

/** A JSON value as one base64url segment of a JWS (RFC 7515). */
export const b64 = (value: unknown): string => Buffer.from(JSON.stringify(value)).toString('base64url');

/** A JWT assembled by hand: for algorithms jsonwebtoken will not sign with (none, HS256 over a PEM). */
export function handMadeJwt(
  header: Record<string, unknown>,
  payload: Record<string, unknown>,
  hmacKey?: string,
): string {
  const body = `${b64(header)}.${b64(payload)}`;
  if (hmacKey === undefined) return `${body}.`;
  return `${body}.${createHmac('sha256', hmacKey).update(body).digest('base64url')}`;
}

/** Claims of a session token as the service would mint them, for forging variants. */
export function sessionClaims(
  user: { userId: string; organizationId: string },
  lifetime = 600,
): Record<string, unknown> {
  const now = Math.floor(Date.now() / 1000);
  return {
    org: user.organizationId,
    token_use: 'session',
    sub: user.userId,
    iss: TEST_ISSUER,
    aud: 'gatehouse',
    jti: 'forged-jti',
    iat: now,
    exp: now + lifetime,
  };
}

export function signEs256(payload: Record<string, unknown>, key: string | KeyObject, kid: string): string {
  return jwt.sign(payload, key, { algorithm: 'ES256', keyid: kid });
}

export function otherEcKey(): KeyObject {
  return generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey;
}
