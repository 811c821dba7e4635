import type { Request } from 'express';
import { basicCredentials } from '../common/basic-auth';
import { AppError, ErrorCode } from '../common/errors';

/** Client credentials as RFC 6749 section 2.3.1 sends them: HTTP Basic, or in the form body. */
export interface ClientCredentials {
  clientId: string;
  clientSecret: string;
}

/** The form's parameters, each present at most once (RFC 6749 section 3.2); else invalid_request. */
export function formParameters(request: Request): Record<string, string> {
  const body: unknown = request.body;
  if (typeof body !== 'object' || body === null) return {};
  // The form reader's own object (no prototype, a string or an array of them per name): checked, not copied.
  const parameters = body as Record<string, unknown>;
  for (const name in parameters) {
    if (typeof parameters[name] !== 'string') {
      throw new AppError(ErrorCode.INVALID_ARGUMENT, `parameter ${name} is repeated`);
    }
  }
  return parameters as Record<string, string>;
}

/**
 * The client's credentials by exactly one method; none, two, or a malformed header are refused. A refusal is
 * invalid_client (UNAUTHENTICATED), challenged with Basic when the Authorization header was used (exception.filter.ts).
 */
export function clientCredentials(request: Request, form: Record<string, string>): ClientCredentials {
  const header = request.headers.authorization;
  if (header !== undefined && header !== '') {
    if (!/^Basic /i.test(header)) {
      throw new AppError(ErrorCode.UNAUTHENTICATED, 'client authentication must use HTTP Basic or the form');
    }
    if (form.client_secret !== undefined) {
      throw new AppError(ErrorCode.INVALID_ARGUMENT, 'the client authenticated by more than one method');
    }
    const credentials = basicCredentials(header);
    if (credentials === null) throw new AppError(ErrorCode.UNAUTHENTICATED, 'malformed Basic credentials');
    const { id: clientId, secret: clientSecret } = credentials;
    if (form.client_id !== undefined && form.client_id !== clientId) {
      throw new AppError(ErrorCode.INVALID_ARGUMENT, 'client_id differs from the Basic credentials');
    }
    return { clientId, clientSecret };
  }
  if (form.client_id === undefined || form.client_secret === undefined || form.client_secret === '') {
    throw new AppError(
      ErrorCode.UNAUTHENTICATED,
      'client authentication required (HTTP Basic or client_id and client_secret)',
    );
  }
  return { clientId: form.client_id, clientSecret: form.client_secret };
}
