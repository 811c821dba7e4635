import type { IncomingMessage, ServerResponse } from 'node:http';
import { VerifiedAccess, Verifier, VerifyError } from './index';
import { metadataResponse } from './resource-metadata';

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

/** RFC 6750's challenge, naming the protected resource metadata when there is one (RFC 9728 section 5.1). */
function challenge(params: string, metadataUrl: string | undefined): Record<string, string> {
  const metadata = metadataUrl === undefined ? '' : `, resource_metadata="${metadataUrl}"`;
  return { 'WWW-Authenticate': `${REALM}${params}${metadata}` };
}

export function refusal(error: unknown, required: readonly string[], metadataUrl?: string): Refusal {
  const code = error instanceof VerifyError ? error.code : 'invalid_token';
  const message = error instanceof Error ? error.message : 'not authenticated';
  if (code === 'insufficient_scope') {
    // The scope to ask for (step-up): what this request needs.
    const params = `, error="insufficient_scope", scope="${required.join(' ')}"`;
    return { status: 403, headers: challenge(params, metadataUrl), body: { code, message } };
  }
  if (code === 'feed_stale') return { status: 503, headers: { 'Retry-After': '1' }, body: { code, message } };
  // A valid token used from an address its key does not allow: forbidden here, as Gatehouse answers it.
  if (code === 'address_not_allowed') return { status: 403, headers: {}, body: { code, message } };
  return { status: 401, headers: challenge(', error="invalid_token"', metadataUrl), body: { code, message } };
}

/** Verifies a request's token (from the client address it came from): the access, or the refusal to answer with. */
export async function check(
  verifier: Verifier,
  authorization: string | string[] | undefined,
  required: readonly string[],
  clientAddress?: string,
): Promise<VerifiedAccess | Refusal> {
  const token = bearerToken(authorization);
  const metadataUrl = verifier.resourceMetadata?.url;
  if (token === undefined) {
    // RFC 6750 section 3.1: a request without a token gets no error code.
    return {
      status: 401,
      headers: challenge('', metadataUrl),
      body: { code: 'invalid_token', message: 'no Bearer token' },
    };
  }
  try {
    return await verifier.verify(token, { scopes: required, clientAddress });
  } catch (error) {
    return refusal(error, required, metadataUrl);
  }
}

export function isRefusal(result: VerifiedAccess | Refusal): result is Refusal {
  return 'status' in result;
}

/**
 * Plain node:http: verifies the request's token (from the address verifier.clientAddress reads) and resolves with the
 * access, or answers the refusal itself (401, 403 or 503 with its challenge and a `{ code, message }` body) and
 * resolves with undefined.
 */
export async function authorize(
  verifier: Verifier,
  request: IncomingMessage,
  response: ServerResponse,
  scopes: readonly string[] = [],
): Promise<VerifiedAccess | undefined> {
  const result = await check(verifier, request.headers.authorization, scopes, verifier.clientAddress(request));
  if (!isRefusal(result)) return result;
  response.writeHead(result.status, { 'Content-Type': 'application/json', ...result.headers });
  response.end(JSON.stringify(result.body));
  return undefined;
}

/**
 * Plain node:http: answers a GET (or HEAD) of the protected resource metadata's paths and returns true; false for any
 * other request, or when the verifier serves no metadata (VerifierOptions.resourceMetadata).
 */
export function serveResourceMetadata(verifier: Verifier, request: IncomingMessage, response: ServerResponse): boolean {
  const metadata = verifier.resourceMetadata;
  if (metadata === undefined || (request.method !== 'GET' && request.method !== 'HEAD')) return false;
  const path = (request.url ?? '').split('?')[0];
  if (!metadata.paths.includes(path)) return false;
  const { headers, body } = metadataResponse(metadata);
  response.writeHead(200, headers);
  response.end(request.method === 'HEAD' ? undefined : body);
  return true;
}
