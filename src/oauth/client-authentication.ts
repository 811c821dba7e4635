import type { Request } from 'express';
import { BASIC_CHALLENGE, basicCredentials } from '../common/basic-auth';
import { OAuthError } from '../common/oauth-errors';

/** Client credentials as RFC 6749 section 2.3.1 sends them: HTTP Basic, or in the form body. */
export interface ClientCredentials {
  clientId: string;
  clientSecret: string;
  /** Basic: a refusal carries `WWW-Authenticate: Basic`. */
  basic: boolean;
}

/** The form's parameters, each present at most once (RFC 6749 section 3.2); else invalid_request. */
export function formParameters(request: Request): Record<string, string> {
  const body: unknown = request.body;
  if (typeof body !== 'object' || body === null) return {};
  // The form reader's own object (no prototype, a string or an array of them per name): checked, not copied.
  const parameters = body as Record<string, unknown>;
  for (const name in parameters) {
    if (typeof parameters[name] !== 'string') {
      throw new OAuthError(400, 'invalid_request', `parameter ${name} is repeated`);
    }
  }
  return parameters as Record<string, string>;
}

export function invalidClient(description: string, basic: boolean): OAuthError {
  return new OAuthError(401, 'invalid_client', description, basic ? { ...BASIC_CHALLENGE } : {});
}

/** The client's credentials by exactly one method; none, two, or a malformed header are refused. */
export function clientCredentials(request: Request, form: Record<string, string>): ClientCredentials {
  const header = request.headers.authorization;
  if (header !== undefined && header !== '') {
    if (!/^Basic /i.test(header)) throw invalidClient('client authentication must use HTTP Basic or the form', true);
    if (form.client_secret !== undefined) {
      throw new OAuthError(400, 'invalid_request', 'the client authenticated by more than one method');
    }
    const credentials = basicCredentials(header);
    if (credentials === null) throw invalidClient('malformed Basic credentials', true);
    const { id: clientId, secret: clientSecret } = credentials;
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
