import { AppError } from '../common/errors';
import type { WorkloadConditions } from './workload-identity.entity';

/*
 * The rules of a workload identity that need no database (docs/workload-identities.md#matching): what a subject and
 * conditions may be, and which identity a verified subject token matches. Pure, so that each case is tested on its own
 * (workload-identity-matching.spec.ts).
 */

export const MAX_SUBJECT_LENGTH = 1024;
export const MAX_CONDITIONS = 16;
export const MAX_CLAIM_NAME_LENGTH = 128;
export const MAX_CONDITION_VALUE_LENGTH = 1024;

/**
 * The registered claims of RFC 7519 section 4.1: the issuer and the subject are the identity's own fields, and the
 * others are checked by the verifier (audience, times) or unique per token (jti), so a condition on them means nothing
 * or never matches twice.
 */
export const RESERVED_CLAIMS: readonly string[] = ['iss', 'sub', 'aud', 'exp', 'nbf', 'iat', 'jti'];

/**
 * Claim names a request body cannot carry: the framework's guard against prototype pollution deletes them from every
 * object of the body before validation (Nest's stripProtoKeys), which would drop such a condition silently and widen
 * the identity. They are refused first (ConditionNamesInterceptor), and here for any other caller.
 */
export const UNAVAILABLE_CLAIMS: readonly string[] = ['__proto__', 'constructor', 'prototype'];

/** The exact messages of the 400s and 404s of /v1/workload-identities (docs/workload-identities.md#errors). */
export const WorkloadIdentityMessages = {
  notFound: 'workload identity not found',
  limitReached: 'workload identity limit reached',
  issuerNotFound: 'trusted issuer not found',
  issuerNotForWorkloads: 'trusted issuer is not of kind workloads',
  emptySubject: 'subject must not be empty',
  subjectInvalid: `subject must be at most ${MAX_SUBJECT_LENGTH} characters, without control characters`,
  conditionsNotObject: 'conditions must be an object of claim names to strings',
  tooManyConditions: `at most ${MAX_CONDITIONS} conditions`,
  claimNameInvalid: `condition claim names must be 1 to ${MAX_CLAIM_NAME_LENGTH} characters, without control characters`,
  reservedClaim: `conditions may not name a registered claim (${RESERVED_CLAIMS.join(', ')})`,
  unavailableClaim: 'condition claim names may not be __proto__, constructor or prototype',
  conditionNotString: 'condition values must be strings',
  conditionValueInvalid: `condition values must be 1 to ${MAX_CONDITION_VALUE_LENGTH} characters, without control characters`,
} as const;

const subjectRefused = (message: string): AppError => new AppError('workload_identity_subject_invalid', { message });
const refused = (message: string): AppError => new AppError('workload_identity_conditions_invalid', { message });

/** Control characters (C0, DEL, C1), which PostgreSQL (NUL) or a reader of the audit log should never meet. */
// eslint-disable-next-line no-control-regex -- finding control characters is this expression's purpose
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/u;

/** Well-formed text of `min` to `max` code points without a control character. */
function isPlainText(value: string, min: number, max: number): boolean {
  if (!value.isWellFormed() || CONTROL.test(value)) return false;
  const length = [...value].length;
  return length >= min && length <= max;
}

/** The subject as given (compared exactly: nothing is trimmed); 400 when empty, too long or not plain text. */
export function checkedSubject(subject: string): string {
  if (subject.trim() === '') throw subjectRefused(WorkloadIdentityMessages.emptySubject);
  if (!isPlainText(subject, 1, MAX_SUBJECT_LENGTH)) throw subjectRefused(WorkloadIdentityMessages.subjectInvalid);
  return subject;
}

/**
 * The body's `conditions` (absent: none) as stored: claim names in code-point order, each to an exact string value;
 * 400 with the reason for anything else.
 */
export function checkedConditions(value: unknown): WorkloadConditions {
  if (value === undefined) return {};
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw refused(WorkloadIdentityMessages.conditionsNotObject);
  }
  const entries = Object.entries(value as Record<string, unknown>);
  if (entries.length > MAX_CONDITIONS) throw refused(WorkloadIdentityMessages.tooManyConditions);
  const checked: Array<[string, string]> = [];
  for (const [name, expected] of entries) {
    if (!isPlainText(name, 1, MAX_CLAIM_NAME_LENGTH)) throw refused(WorkloadIdentityMessages.claimNameInvalid);
    if (RESERVED_CLAIMS.includes(name)) throw refused(WorkloadIdentityMessages.reservedClaim);
    if (UNAVAILABLE_CLAIMS.includes(name)) throw refused(WorkloadIdentityMessages.unavailableClaim);
    if (typeof expected !== 'string') throw refused(WorkloadIdentityMessages.conditionNotString);
    if (!isPlainText(expected, 1, MAX_CONDITION_VALUE_LENGTH)) {
      throw refused(WorkloadIdentityMessages.conditionValueInvalid);
    }
    checked.push([name, expected]);
  }
  checked.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return Object.fromEntries(checked);
}

/** A verified subject token's claims (federation's SubjectClaims fits): `iss`, `sub` and any others. */
export interface SubjectTokenClaims {
  iss: string;
  sub: string;
  [claim: string]: unknown;
}

/** What matching needs of an identity. */
export interface MatchCandidate {
  organizationId: string;
  issuer: string;
  subject: string;
  conditions: WorkloadConditions;
}

/** Every condition names a claim the token has, as a string equal to the condition's value. */
export function conditionsMet(conditions: WorkloadConditions, claims: SubjectTokenClaims): boolean {
  for (const [name, expected] of Object.entries(conditions)) {
    if (!Object.hasOwn(claims, name) || claims[name] !== expected) return false;
  }
  return true;
}

/** How specific an identity is: its number of conditions (the subject is always there). */
export function specificity(candidate: Pick<MatchCandidate, 'conditions'>): number {
  return Object.keys(candidate.conditions).length;
}

export type MatchOutcome<T> =
  | { outcome: 'matched'; identity: T }
  | { outcome: 'none' }
  /** Several identities match and none is more specific, or they belong to several organizations. */
  | { outcome: 'ambiguous'; candidates: T[] };

/**
 * The identity a verified subject token matches among `candidates` (usable identities of the token's trusted issuers):
 * `iss` and `sub` exactly, and every condition. Matches in two organizations are ambiguous whatever their conditions (no
 * organization's identity can take another's workload by adding conditions); within one organization the identity with
 * the most conditions wins, and a tie is ambiguous (docs/adr/0038-workload-identities.md).
 */
export function selectMatch<T extends MatchCandidate>(
  candidates: readonly T[],
  claims: SubjectTokenClaims,
): MatchOutcome<T> {
  const matching = candidates.filter(
    (candidate) =>
      candidate.issuer === claims.iss &&
      candidate.subject === claims.sub &&
      conditionsMet(candidate.conditions, claims),
  );
  if (matching.length === 0) return { outcome: 'none' };
  if (new Set(matching.map((candidate) => candidate.organizationId)).size > 1) {
    return { outcome: 'ambiguous', candidates: matching };
  }
  const most = Math.max(...matching.map(specificity));
  const best = matching.filter((candidate) => specificity(candidate) === most);
  return best.length === 1 ? { outcome: 'matched', identity: best[0] } : { outcome: 'ambiguous', candidates: best };
}
