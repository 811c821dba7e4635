import { VerifiedAccess, Verifier, VerifyError } from './index';

/** What a refused request is answered: RFC 6750's challenge, and 503 while the feed is stale. */
export interface Refusal {
  status: 401 | 403 | 503;
  headers: Record<string, string>;
  body: { code: string; message: string };
}

const REALM = 'Bearer realm="gatehouse"';

/** The Bearer token of a request's Authorization header (RFC 6750 section 2.1), or undefined. */
export function bearerToken(header: string | string[] | undefined): string | undefined {
  if (typeof header !== 'string') return undefined;
  const match = /^Bearer +([A-Za-z0-9._~+/-]+=*) *$/i.exec(header);
  return match?.[1];
}

export function refusal(error: unknown, required: readonly string[]): Refusal {
  const code = error instanceof VerifyError ? error.code : 'invalid_token';
  const message = error instanceof Error ? error.message : 'not authenticated';
  if (code === 'insufficient_scope') {
    return {
      status: 403,
      headers: { 'WWW-Authenticate': `${REALM}, error="insufficient_scope", scope="${required.join(' ')}"` },
      body: { code, message },
    };
  }
  if (code === 'feed_stale') return { status: 503, headers: { 'Retry-After': '1' }, body: { code, message } };
  // A valid token used from an address its key does not allow: forbidden here, as Gatehouse answers it.
  if (code === 'address_not_allowed') return { status: 403, headers: {}, body: { code, message } };
  return { status: 401, headers: { 'WWW-Authenticate': `${REALM}, error="invalid_token"` }, body: { code, message } };
}

/** Verifies a request's token (from the client address it came from): the access, or the refusal to answer with. */
export async function check(
  verifier: Verifier,
  authorization: string | string[] | undefined,
  required: readonly string[],
  clientAddress?: string,
): Promise<VerifiedAccess | Refusal> {
  const token = bearerToken(authorization);
  if (token === undefined) {
    return {
      status: 401,
      headers: { 'WWW-Authenticate': REALM },
      body: { code: 'invalid_token', message: 'no Bearer token' },
    };
  }
  try {
    return await verifier.verify(token, { scopes: required, clientAddress });
  } catch (error) {
    return refusal(error, required);
  }
}

export function isRefusal(result: VerifiedAccess | Refusal): result is Refusal {
  return 'status' in result;
}
