import { AppError } from '../common/errors';
import type { ErrorReason } from '../common/errors';
import type { NewTrustedIssuer, TrustedIssuerErrorDetails } from '../federation/trusted-issuers.service';

/** The flag a person typed for each field of a trusted issuer (src/cli/program.ts, `trusted-issuer add`). */
const FLAGS: Readonly<Record<keyof NewTrustedIssuer, string>> = {
  organization: '--org',
  issuer: '--issuer',
  kind: '--kind',
  audience: '--audience',
  clientId: '--client-id',
  clientSecret: '--client-secret',
  tokenEndpointAuth: '--token-endpoint-auth',
  emailDomains: '--email-domain',
  jitRole: '--jit-role',
  allowedOrigins: '--allow-origin',
};

/** `--kind people` for the kind, the flag for any other field. */
function flag(option: keyof NewTrustedIssuer): string {
  return option === 'kind' ? '--kind people' : FLAGS[option];
}

function flags(options: readonly (keyof NewTrustedIssuer)[] | undefined, separator = ', '): string | undefined {
  return options === undefined || options.length === 0 ? undefined : options.map(flag).join(separator);
}

/** `<options> needs <needs>`, or undefined when the details do not say. */
function needs(details: TrustedIssuerErrorDetails): string | undefined {
  const subject = flags(details.options?.slice(0, 1));
  const needed = flags(details.needs, ' and ');
  return subject === undefined || needed === undefined ? undefined : `${subject} needs ${needed}`;
}

type Wording = (details: TrustedIssuerErrorDetails, message: string) => string | undefined;

/**
 * How the admin CLI words a domain error (docs/operations.md#admin-cli): services speak of the domain, the CLI of the
 * flags a person typed. Each wording reads the reason and the error's details (the variable parts of its message),
 * never the message's text, so that a service may reword its message without breaking them; one whose details are
 * missing (undefined) prints the message as it is, as does a reason not here.
 */
const WORDING: Partial<Record<ErrorReason, Wording>> = {
  issuer_invalid: ({ problem }) => (problem === undefined ? undefined : `--issuer ${problem}`),
  allowed_origin_invalid: ({ value, problem }) =>
    value === undefined || problem === undefined ? undefined : `--allow-origin ${value} ${problem}`,
  issuer_client_invalid: (details) => {
    const subject = flags(details.options?.slice(0, 1));
    if (details.problem !== undefined && subject !== undefined) return `${subject} ${details.problem}`;
    const text = needs(details);
    return details.options?.[0] === 'kind' && text !== undefined ? `${text} (Gatehouse's client at the issuer)` : text;
  },
  issuer_option_not_for_kind: ({ options }) => {
    const named = flags(options);
    return named === undefined ? undefined : `${named}: only for --kind people`;
  },
  issuer_audience_invalid: (details) => {
    if (details.value !== undefined && details.problem !== undefined) {
      return `the default audience ${details.value} ${details.problem}: give --audience`;
    }
    return details.options?.includes('kind') === true && details.needs?.[0] === 'clientId'
      ? '--audience of a people issuer is its --client-id (the audience of its ID tokens)'
      : undefined;
  },
  jit_role_needs_email_domain: () =>
    '--jit-role needs --email-domain: just-in-time membership adds only people of the domains the organization owns ' +
    "(without them, the issuer's tokens could make anyone a member, another organization's admin included)",
  people_issuer_exists: ({ id }, message) =>
    id === undefined ? undefined : `${message} (trusted-issuer remove --id ${id})`,
  issuer_discovery_failed: ({ foreignOrigin }, message) =>
    foreignOrigin === undefined
      ? undefined
      : `${message}; if the issuer does serve it there, trust the issuer with --allow-origin ${foreignOrigin}`,
};

export function cliMessage(error: unknown): string {
  if (error instanceof AppError) {
    return WORDING[error.reason]?.(error.details, error.message) ?? error.message;
  }
  return error instanceof Error ? error.message : String(error);
}
