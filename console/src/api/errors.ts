import { GatehouseError } from '../../../client';

/** The fourteen checks' outcome, as a blocked integration save carries it (docs/api.md#validation-outcome). */
export interface ValidationOutcome {
  keys_status: 'Working' | 'Invalid';
  required_permissions_status: 'Granted' | 'Missing' | 'Unknown';
  can_save: boolean;
  permissions: Array<{ name: string; required: boolean; status: 'Granted' | 'Missing' | 'Unknown' }>;
  checked_at: string;
}

/** The validation outcome an error answer carries (a blocked save), if any. */
export function validationOf(error: unknown): ValidationOutcome | undefined {
  if (!(error instanceof GatehouseError)) return undefined;
  const validation = error.body.validation as ValidationOutcome | undefined;
  return validation !== undefined && Array.isArray(validation.permissions) ? validation : undefined;
}

/** The API's names of the fields a message may start with, as the console's forms label them. */
const FIELD_LABELS: Array<[string, string]> = [
  ['allowed_cidrs', 'Allowed addresses'],
  ['rate_limit', 'Rate limit'],
  ['expires_at', 'Expiry'],
  ['webhook url', 'Webhook URL'],
];

function sentence(message: string): string {
  const field = FIELD_LABELS.find(([name]) => message.startsWith(`${name} `) || message.startsWith(`${name}:`));
  // A message that starts with an address keeps it as written (https://…, not Https://…).
  const text =
    field !== undefined
      ? field[1] + message.slice(field[0].length)
      : /^[a-z][a-z0-9+.-]*:\/\//.test(message)
        ? message
        : message.charAt(0).toUpperCase() + message.slice(1);
  return /[.!?]$/.test(text) ? text : `${text}.`;
}

const BY_MESSAGE: Record<string, string> = {
  'sign-in link already used':
    'This sign-in link has already been used. Each link works once: ask an administrator for a new one.',
  'sign-in link expired':
    'This sign-in link has expired: links are valid for 10 minutes. Ask an administrator for a new one.',
  'sign-in link invalid':
    'This sign-in link is not valid. Check that you opened the whole link, or ask an administrator for a new one.',
  'sign-in link belongs to another browser':
    'This sign-in link belongs to a single sign-on started in another browser, so it does not work here. If someone ' +
    'sent it to you, do not use it: it would sign you in as them. Sign in yourself below.',
  'invitation already used':
    'This invitation has already been used. Each invitation works once: if it was not you, tell an administrator.',
  'invitation expired': 'This invitation has expired: invitations work for 7 days. Ask an administrator for a new one.',
  'invitation invalid':
    'This invitation is not valid: it was withdrawn or replaced by a newer one, or the link is incomplete. Ask an administrator for a new one.',
  'member not found': 'This person is no longer a member.',
  'invitation not found': 'This invitation was used or withdrawn meanwhile.',
  'user not authenticated': 'Your session has ended. Sign in again with a new link.',
  'insufficient permissions': 'Your role does not allow this.',
  'route not found': 'This Gatehouse server does not offer this feature yet.',
  'api key not found': 'This API key does not exist any more, or is not one you can see.',
  'notification integration not found': 'This integration does not exist any more.',
  'invalid request parameters': 'Some values are not valid. Check the form and try again.',
  'api key limit reached': 'You have reached the limit of active keys. Revoke a key you no longer use, then try again.',
  'api key is not active': 'This key is no longer active, so it cannot be rotated.',
  'monitoring api keys are invalid': 'Not saved: the monitoring API key or application key is invalid for this site.',
  'monitoring provider unavailable':
    'The monitoring provider did not answer. Nothing was saved; try again in a moment.',
  'request body too large': 'What you entered is too long.',
};

/**
 * A sentence for a person, for any failure: an error answer of the API (by its code and message),
 * an answer that is not one (a proxy's page), or no answer at all. Never a raw body.
 */
export function readableError(error: unknown): string {
  if (error instanceof GatehouseError) {
    const reference = error.requestId === undefined ? '' : ` (reference ${error.requestId})`;
    if (error.message === 'required monitoring permissions are missing') {
      const missing = (validationOf(error)?.permissions ?? [])
        .filter((p) => p.required && p.status === 'Missing')
        .map((p) => p.name);
      return `Not saved: required permissions are missing${missing.length > 0 ? `: ${missing.join(', ')}` : ''}. Grant them to the application key at the provider, then validate again.`;
    }
    const known = BY_MESSAGE[error.message];
    if (known !== undefined) return known;
    switch (error.code) {
      case 'RESOURCE_EXHAUSTED':
        return `Too many attempts. Try again${error.retryAfterSeconds === undefined ? ' later' : ` in ${error.retryAfterSeconds} seconds`}.`;
      case 'UNAVAILABLE':
        return 'Gatehouse cannot answer right now. Try again in a moment.';
      case 'INTERNAL':
        return `Something went wrong on the server${reference}. Try again; if it keeps failing, tell an administrator.`;
      case 'UNKNOWN':
        return `The server answered with an unexpected error (HTTP ${error.status})${reference}. Try again in a moment.`;
      default:
        return sentence(error.message);
    }
  }
  if (error instanceof TypeError) return 'Cannot reach Gatehouse. Check your connection and try again.';
  return 'Something went wrong. Try again.';
}
