import { createParamDecorator, ExecutionContext } from '@nestjs/common';
import type { Request } from 'express';
import { BASIC_CHALLENGE, basicCredentials } from './basic-auth';
import { AppError, ErrorReason } from './errors';

/** Client credentials as RFC 6749 section 2.3.1 sends them: HTTP Basic, or in the form body. */
export interface ClientCredentials {
  clientId: string;
  clientSecret: string;
}

/** The form content type of the OAuth endpoints (RFC 6749 section 4.4.2, RFC 7662 section 2.1). */
export const FORM_TYPE = /^application\/x-www-form-urlencoded\s*(?:;|$)/i;

/** An OAuth endpoint's form body (RFC 6749 section 3.2). */
export type FormParameters = Record<string, string>;

/** The form's parameters, each present at most once (RFC 6749 section 3.2); else invalid_request. */
export function formParameters(request: Request): FormParameters {
  const body: unknown = request.body;
  if (typeof body !== 'object' || body === null) return {};
  // The form reader's own object (no prototype, a string or an array of them per name): checked, not copied.
  const parameters = body as Record<string, unknown>;
  for (const name in parameters) {
    if (typeof parameters[name] !== 'string') {
      throw new AppError('form_parameter_repeated', { message: `parameter ${name} is repeated` });
    }
  }
  return parameters as Record<string, string>;
}

/** A client that did not authenticate: 401 with the Basic challenge (on /oauth/, only to a client that tried it). */
export function unauthenticatedClient(reason: ErrorReason, message: string): AppError {
  return new AppError(reason, { message, headers: { ...BASIC_CHALLENGE } });
}

/**
 * The client's credentials by exactly one method; none, two, or a malformed header are refused. A refusal is
 * invalid_client (UNAUTHENTICATED), challenged with Basic when the Authorization header was used (exception.filter.ts).
 */
export function clientCredentials(request: Request, form: FormParameters): ClientCredentials {
  const header = request.headers.authorization;
  if (header !== undefined && header !== '') {
    if (!/^Basic /i.test(header)) {
      throw unauthenticatedClient(
        'client_authentication_missing',
        'client authentication must use HTTP Basic or the form',
      );
    }
    if (form.client_secret !== undefined) {
      throw new AppError('client_authentication_ambiguous', {
        message: 'the client authenticated by more than one method',
      });
    }
    const credentials = basicCredentials(header);
    if (credentials === null)
      throw unauthenticatedClient('client_authentication_malformed', 'malformed Basic credentials');
    const { id: clientId, secret: clientSecret } = credentials;
    if (form.client_id !== undefined && form.client_id !== clientId) {
      throw new AppError('client_authentication_ambiguous', {
        message: 'client_id differs from the Basic credentials',
      });
    }
    return { clientId, clientSecret };
  }
  if (form.client_id === undefined || form.client_secret === undefined || form.client_secret === '') {
    throw unauthenticatedClient(
      'client_authentication_missing',
      'client authentication required (HTTP Basic or client_id and client_secret)',
    );
  }
  return { clientId: form.client_id, clientSecret: form.client_secret };
}

/** The handler's view of the form: `@Form() form: FormParameters`. */
export const Form = createParamDecorator((_data: unknown, context: ExecutionContext): FormParameters =>
  formParameters(context.switchToHttp().getRequest()),
);
