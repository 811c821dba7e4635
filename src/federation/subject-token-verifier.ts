import { Injectable } from '@nestjs/common';
import { decodeJwt, decodeProtectedHeader, errors, JWTPayload, jwtVerify, ProtectedHeaderParameters } from 'jose';
import { IssuerKeys, IssuerUnavailable } from './issuer-keys';
import { MAX_ISSUER_LENGTH } from './issuer-url';
import {
  ALLOWED_ALGORITHMS,
  audienceContains,
  CLOCK_LEEWAY_SECONDS,
  isAllowedAlgorithm,
  MAX_SUBJECT_TOKEN_LENGTH,
  RefusalReason,
  timeRefusal,
} from './subject-token-rules';
import type { IssuerKind, TrustedIssuer } from './trusted-issuer.entity';
import { TrustedIssuersRepository } from './trusted-issuers.repository';

/** A subject token's claims once verified: at least these, and whatever else the issuer put in. */
export interface SubjectClaims extends JWTPayload {
  iss: string;
  sub: string;
  exp: number;
  iat: number;
}

export interface AcceptedSubjectToken {
  ok: true;
  claims: SubjectClaims;
  /** The entries of the token's issuer and kind whose audience the token has (several organizations: workloads). */
  issuers: TrustedIssuer[];
}

export interface RefusedSubjectToken {
  ok: false;
  reason: RefusalReason;
  /** The token's `iss` when it could be read (unverified), for the audit log. */
  issuer: string | null;
  /** For logs only, never for the client: the check that failed, in words. */
  detail: string;
}

export type SubjectTokenOutcome = AcceptedSubjectToken | RefusedSubjectToken;

/**
 * `typ` values a subject token may carry (RFC 8725 section 3.11): none, `JWT`, or an access token's `at+jwt`. Other
 * typed JWTs of the same issuer (logout tokens, security event tokens) are not credentials to exchange.
 */
const ACCEPTED_TYPES = new Set(['jwt', 'at+jwt']);

/**
 * Verifies a subject token of RFC 8693 against the trusted issuers of `kind` (docs/federation.md#subject-tokens):
 * size, algorithm, issuer, signature by the issuer's published keys, times, lifetime, audience. Every refusal carries a
 * reason for the audit log; `issuer_unavailable` (the issuer's keys could not be fetched in time) is the one the caller
 * answers 503 instead of `invalid_grant`.
 */
@Injectable()
export class SubjectTokenVerifier {
  constructor(
    private readonly issuers: TrustedIssuersRepository,
    private readonly keys: IssuerKeys,
  ) {}

  async verify(token: string, kind: IssuerKind, now = Date.now()): Promise<SubjectTokenOutcome> {
    if (token.length > MAX_SUBJECT_TOKEN_LENGTH) {
      return refused('too_large', null, `${token.length} characters, more than ${MAX_SUBJECT_TOKEN_LENGTH}`);
    }
    let header: ProtectedHeaderParameters;
    let unverified: JWTPayload;
    try {
      header = decodeProtectedHeader(token);
      unverified = decodeJwt(token);
    } catch (error) {
      return refused('malformed', null, messageOf(error));
    }
    const issuer = typeof unverified.iss === 'string' && unverified.iss !== '' ? unverified.iss : null;
    if (!isAllowedAlgorithm(header.alg)) return refused('algorithm_not_allowed', issuer, `alg ${String(header.alg)}`);
    if (header.typ !== undefined && !ACCEPTED_TYPES.has(normalizedType(header.typ))) {
      return refused('malformed', issuer, `typ ${header.typ}`);
    }
    if (issuer === null) return refused('malformed', null, 'no iss');
    const entries = issuer.length > MAX_ISSUER_LENGTH ? [] : await this.issuers.findByIssuer(issuer, kind);
    if (entries.length === 0) return refused('unknown_issuer', issuer, `no ${kind} issuer ${issuer} is trusted`);

    let claims: SubjectClaims;
    try {
      const keys = await this.keys.keysOf(issuer);
      const verified = await jwtVerify(token, keys, {
        algorithms: [...ALLOWED_ALGORITHMS],
        clockTolerance: CLOCK_LEEWAY_SECONDS,
        currentDate: new Date(now),
        requiredClaims: ['exp', 'iat', 'sub'],
      });
      claims = verified.payload as SubjectClaims;
    } catch (error) {
      return refused(reasonOf(error), issuer, messageOf(error));
    }
    if (typeof claims.sub !== 'string' || claims.sub === '') return refused('malformed', issuer, 'no sub');
    if ('events' in claims) return refused('malformed', issuer, 'a security event token (events claim)');
    const timing = timeRefusal(claims, Math.floor(now / 1000));
    if (timing !== null) return refused(timing, issuer, `exp ${claims.exp}, iat ${claims.iat}, nbf ${claims.nbf}`);
    const matching = entries.filter((entry) => audienceContains(claims.aud, entry.audience));
    if (matching.length === 0) return refused('wrong_audience', issuer, `aud ${JSON.stringify(claims.aud)}`);
    return { ok: true, claims, issuers: matching };
  }
}

function refused(reason: RefusalReason, issuer: string | null, detail: string): RefusedSubjectToken {
  return { ok: false, reason, issuer, detail };
}

function reasonOf(error: unknown): RefusalReason {
  if (error instanceof IssuerUnavailable) return 'issuer_unavailable';
  if (error instanceof errors.JWTExpired) return 'expired';
  if (error instanceof errors.JWTClaimValidationFailed) {
    return error.claim === 'nbf' && error.reason === 'check_failed' ? 'not_yet_valid' : 'malformed';
  }
  if (error instanceof errors.JOSEAlgNotAllowed) return 'algorithm_not_allowed';
  if (error instanceof errors.JWTInvalid || error instanceof errors.JWSInvalid) return 'malformed';
  // A signature that does not verify, no key with the token's kid, or a key jose refuses for the algorithm.
  return 'bad_signature';
}

/** RFC 7515 section 4.1.9: `application/` may be left out; media types compare case-insensitively. */
function normalizedType(typ: string): string {
  return typ.toLowerCase().replace(/^application\//, '');
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
