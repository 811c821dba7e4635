import { AppError } from '../common/errors';
import type { ErrorReason } from '../common/errors';

/** The words of the trusted-issuer service for an option, and the flag a person typed for it. */
const FLAGS: ReadonlyArray<readonly [string, string]> = [
  ['a token endpoint auth method', '--token-endpoint-auth'],
  ['the client secret', '--client-secret'],
  ['a client secret', '--client-secret'],
  ['client secret', '--client-secret'],
  ['a client id', '--client-id'],
  ['its client id', 'its --client-id'],
  ['client id', '--client-id'],
  ['e-mail domains', '--email-domain'],
  ['a just-in-time role', '--jit-role'],
  ['just-in-time role', '--jit-role'],
  ['a people issuer needs', '--kind people needs'],
  ['only for a people issuer', 'only for --kind people'],
  ['the audience of a people issuer', '--audience of a people issuer'],
  ['give one', 'give --audience'],
];

function withFlags(message: string): string {
  return FLAGS.reduce((text, [words, flag]) => text.replace(words, flag), message);
}

/**
 * How the admin CLI words a domain error (docs/operations.md#admin-cli): services speak of the domain, the CLI of the
 * flags a person typed. A reason not here prints its message as it is.
 */
const WORDING: Partial<Record<ErrorReason, (message: string) => string>> = {
  issuer_invalid: (message) => message.replace(/^the issuer /, '--issuer '),
  allowed_origin_invalid: (message) => `--allow-origin ${message}`,
  issuer_client_invalid: withFlags,
  issuer_option_not_for_kind: withFlags,
  issuer_audience_invalid: withFlags,
  jit_role_needs_email_domain: withFlags,
  people_issuer_exists: (message) => {
    const id = /\(id ([^)]+)\)/.exec(message)?.[1];
    return id === undefined ? message : `${message} (trusted-issuer remove --id ${id})`;
  },
};

export function cliMessage(error: unknown): string {
  if (error instanceof AppError) return WORDING[error.reason]?.(error.message) ?? error.message;
  return error instanceof Error ? error.message : String(error);
}
