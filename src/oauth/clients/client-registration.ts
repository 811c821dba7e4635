import type { ErrorReason } from '../../common/errors';
import { MAX_REDIRECT_URI_LENGTH, RedirectUriRules, redirectUriProblem } from './redirect-uris';

export { MAX_REDIRECT_URI_LENGTH, redirectUriProblem };

/**
 * What a registered client may say of itself (docs/mcp.md#clients): RFC 7591's metadata for a dynamic registration,
 * an organization admin's name and redirect URIs for an internal app; the same redirect URI rules for both and for
 * metadata documents (OAuth 2.1 section 2.3.1, RFC 8252 sections 7.1 and 7.3).
 */

export const MAX_REDIRECT_URIS = 10;
export const MAX_CLIENT_NAME = 255;
/** What a dynamic client without a client_name is called on the consent page. */
export const UNNAMED_CLIENT = 'Unnamed app';

/** The only grants and response type a registered client gets (public clients of the authorization code grant). */
export const CLIENT_GRANT_TYPES = ['authorization_code', 'refresh_token'] as const;
export const CLIENT_RESPONSE_TYPES = ['code'] as const;

/** A refused registration, named as RFC 7591 section 3.2.2 does (invalid_redirect_uri, invalid_client_metadata). */
export class RegistrationRefused extends Error {
  constructor(
    readonly reason: Extract<ErrorReason, 'client_metadata_invalid' | 'client_redirect_uri_invalid'>,
    message: string,
  ) {
    super(message);
  }
}

/** 1-10 distinct redirect URIs, each good; else a refusal naming the first problem. */
export function checkRedirectUris(value: unknown, rules?: RedirectUriRules): string[] {
  if (!Array.isArray(value) || value.length === 0) {
    throw new RegistrationRefused('client_redirect_uri_invalid', 'redirect_uris must be a list of 1 to 10 URIs');
  }
  if (value.length > MAX_REDIRECT_URIS) {
    throw new RegistrationRefused('client_redirect_uri_invalid', `redirect_uris has more than ${MAX_REDIRECT_URIS}`);
  }
  for (const uri of value) {
    if (typeof uri !== 'string') {
      throw new RegistrationRefused('client_redirect_uri_invalid', 'every redirect URI must be a string');
    }
    const problem = redirectUriProblem(uri, rules);
    if (problem !== null) throw new RegistrationRefused('client_redirect_uri_invalid', problem);
  }
  return [...new Set(value as string[])];
}

/** A name people read: 1-255 characters, no control character. */
export function clientNameProblem(name: unknown): string | null {
  if (typeof name !== 'string' || name.trim() === '') return 'client_name must be a non-empty string';
  if ([...name].length > MAX_CLIENT_NAME) return `client_name is longer than ${MAX_CLIENT_NAME} characters`;
  // eslint-disable-next-line no-control-regex -- control characters are what is refused
  if (/[\u0000-\u001f\u007f-\u009f]/.test(name)) return 'client_name has a control character';
  return null;
}

function listWithin(value: unknown, allowed: readonly string[], field: string, needs: string): void {
  if (value === undefined) return;
  if (!Array.isArray(value) || value.some((item) => typeof item !== 'string' || !allowed.includes(item))) {
    throw new RegistrationRefused('client_metadata_invalid', `${field} may hold only ${allowed.join(' and ')}`);
  }
  if (!value.includes(needs)) throw new RegistrationRefused('client_metadata_invalid', `${field} must hold ${needs}`);
}

/** What a dynamic registration keeps of its metadata. */
export interface DynamicRegistration {
  name: string;
  redirectUris: string[];
}

/**
 * RFC 7591 section 2's metadata of a public client of the authorization code grant: redirect_uris (required), and if
 * given, token_endpoint_auth_method `none`, grant_types within authorization_code and refresh_token, response_types
 * `code`, a client_name. Other fields (logo_uri, scope, contacts, ...) are not kept, so not echoed (section 3.2.1).
 */
export function parseDynamicRegistration(body: unknown): DynamicRegistration {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new RegistrationRefused('client_metadata_invalid', 'the body must be a JSON object of client metadata');
  }
  const metadata = body as Record<string, unknown>;
  const redirectUris = checkRedirectUris(metadata.redirect_uris);
  const method = metadata.token_endpoint_auth_method;
  if (method !== undefined && method !== 'none') {
    throw new RegistrationRefused(
      'client_metadata_invalid',
      'only public clients may register: token_endpoint_auth_method must be none',
    );
  }
  listWithin(metadata.grant_types, CLIENT_GRANT_TYPES, 'grant_types', 'authorization_code');
  listWithin(metadata.response_types, CLIENT_RESPONSE_TYPES, 'response_types', 'code');
  if (metadata.client_name === undefined) return { name: UNNAMED_CLIENT, redirectUris };
  const problem = clientNameProblem(metadata.client_name);
  if (problem !== null) throw new RegistrationRefused('client_metadata_invalid', problem);
  return { name: (metadata.client_name as string).trim(), redirectUris };
}
