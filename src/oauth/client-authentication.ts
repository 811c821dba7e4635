import type { Request } from 'express';
import { OAuthError } from '../common/oauth-errors';

/** Client credentials as RFC 6749 section 2.3.1 sends them: HTTP Basic, or in the form body. */
export interface ClientCredentials {
  clientId: string;
  clientSecret: string;
  /** Basic: a refusal carries `WWW-Authenticate: Basic`. */
  basic: boolean;
}

export const BASIC_CHALLENGE: Readonly<Record<string, string>> = { 'WWW-Authenticate': 'Basic realm="gatehouse"' };

/** The form's parameters, each present at most once (RFC 6749 section 3.2); else invalid_request. */
export function formParameters(request: Request): Record<string, string> {
  const body: unknown = request.body;
  if (typeof body !== 'object' || body === null) return {};
  const parameters: Record<string, string> = {};
  for (const [name, value] of Object.entries(body as Record<string, unknown>)) {
    if (typeof value !== 'string') throw new OAuthError(400, 'invalid_request', `parameter ${name} is repeated`);
    parameters[name] = value;
  }
  return parameters;
}

/** `application/x-www-form-urlencoded` decoding of one Basic part (RFC 6749 section 2.3.1). */
function formDecode(part: string): string | null {
  try {
    return decodeURIComponent(part.replace(/\+/g, ' '));
  } catch {
    return null;
  }
}

export function invalidClient(description: string, basic: boolean): OAuthError {
  return new OAuthError(401, 'invalid_client', description, basic ? { ...BASIC_CHALLENGE } : {});
}

/** The client's credentials by exactly one method; none, two, or a malformed header are refused. */
export function clientCredentials(request: Request, form: Record<string, string>): ClientCredentials {
  const header = request.headers.authorization;
  if (header !== undefined && header !== '') {
    const match = /^Basic +([A-Za-z0-9+/]+=*) *$/i.exec(header);
    if (match === null) throw invalidClient('client authentication must use HTTP Basic or the form', true);
    if (form.client_secret !== undefined) {
      throw new OAuthError(400, 'invalid_request', 'the client authenticated by more than one method');
    }
    const decoded = Buffer.from(match[1], 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    const clientId = colon === -1 ? null : formDecode(decoded.slice(0, colon));
    const clientSecret = colon === -1 ? null : formDecode(decoded.slice(colon + 1));
    if (clientId === null || clientSecret === null || clientId === '' || clientSecret === '') {
      throw invalidClient('malformed Basic credentials', true);
    }
    if (form.client_id !== undefined && form.client_id !== clientId) {
      throw new OAuthError(400, 'invalid_request', 'client_id differs from the Basic credentials');
    }
    return { clientId, clientSecret, basic: true };
  }
  if (form.client_id === undefined || form.client_secret === undefined || form.client_secret === '') {
    throw invalidClient('client authentication required (HTTP Basic or client_id and client_secret)', false);
  }
  return { clientId: form.client_id, clientSecret: form.client_secret, basic: false };
}
