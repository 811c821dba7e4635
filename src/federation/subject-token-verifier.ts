import { Injectable } from '@nestjs/common';
import { decodeJwt, decodeProtectedHeader, JWTPayload, ProtectedHeaderParameters } from 'jose';
import { IssuerKeys, IssuerUnavailable } from './issuer-keys';
import { MAX_ISSUER_LENGTH } from './issuer-url';
import { signatureVerifies } from './jws-signature';
import {
  audienceContains,
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
  /** The token's protected header, as signed (its `typ`: what kind of JWT the issuer says it is). */
  header: ProtectedHeaderParameters;
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
    const segments = token.split('.');
    if (segments.length !== 3) return refused('malformed', null, 'not a signed JWT in compact form');
    let header: ProtectedHeaderParameters;
    let unverified: JWTPayload;
    try {
      header = decodeProtectedHeader(token);
      unverified = decodeJwt(token);
    } catch (error) {
      return refused('malformed', null, messageOf(error));
    }
    const issuer = typeof unverified.iss === 'string' && unverified.iss !== '' ? unverified.iss : null;
    const alg = header.alg;
    if (!isAllowedAlgorithm(alg)) return refused('algorithm_not_allowed', issuer, `alg ${String(alg)}`);
    // The header is the sender's JSON, whatever jose's type says: a `typ` that is no string is no media type either.
    const typ: unknown = header.typ;
    if (typ !== undefined && (typeof typ !== 'string' || !ACCEPTED_TYPES.has(normalizedType(typ)))) {
      return refused('malformed', issuer, `typ ${JSON.stringify(typ)}`);
    }
    // RFC 7515 section 4.1.11: no extension is understood here, so a token that marks one critical is refused.
    if (header.crit !== undefined || header.b64 !== undefined)
      return refused('malformed', issuer, 'crit or b64 header');
    if (issuer === null) return refused('malformed', null, 'no iss');
    const entries = issuer.length > MAX_ISSUER_LENGTH ? [] : await this.issuers.findByIssuer(issuer, kind);
    if (entries.length === 0) return refused('unknown_issuer', issuer, `no ${kind} issuer ${issuer} is trusted`);

    // The issuer's key for the token's kid and alg, as jose's key set selects it; the signature checked with it.
    const [encodedHeader, encodedPayload, signature] = segments;
    try {
      const keys = await this.keys.keysOf(issuer, originsAllowedByAll(entries));
      const key = await keys(Object.assign({}, header, { alg }), { payload: encodedPayload, signature });
      if (!signatureVerifies(alg, key, `${encodedHeader}.${encodedPayload}`, signature)) {
        return refused('bad_signature', issuer, "the signature does not verify with the issuer's key");
      }
    } catch (error) {
      return refused(reasonOf(error), issuer, messageOf(error));
    }
    const malformed = claimsMalformation(unverified);
    if (malformed !== null) return refused('malformed', issuer, malformed);
    const claims = unverified as SubjectClaims;
    if ('events' in claims) return refused('malformed', issuer, 'a security event token (events claim)');
    const timing = timeRefusal(claims, Math.floor(now / 1000));
    if (timing !== null) return refused(timing, issuer, `exp ${claims.exp}, iat ${claims.iat}, nbf ${claims.nbf}`);
    const matching = entries.filter((entry) => audienceContains(claims.aud, entry.audience));
    if (matching.length === 0) return refused('wrong_audience', issuer, `aud ${JSON.stringify(claims.aud)}`);
    return { ok: true, claims, issuers: matching, header };
  }
}

/**
 * The origins every entry of the issuer allows for its key set: one organization's `--allow-origin` does not send the
 * key fetches of another that trusts the same issuer anywhere it did not allow (docs/federation.md#discovery).
 */
function originsAllowedByAll(entries: TrustedIssuer[]): string[] {
  return entries[0].allowedOrigins.filter((origin) => entries.every((entry) => entry.allowedOrigins.includes(origin)));
}

/** What is wrong with the claims' shape (RFC 7519 section 4.1): exp, iat and sub are required; null when nothing. */
function claimsMalformation(claims: JWTPayload): string | null {
  for (const name of ['exp', 'iat'] as const) {
    if (!Number.isFinite(claims[name])) return `${name} is not a number`;
  }
  if (claims.nbf !== undefined && !Number.isFinite(claims.nbf)) return 'nbf is not a number';
  if (typeof claims.sub !== 'string' || claims.sub === '') return 'no sub';
  return null;
}

function refused(reason: RefusalReason, issuer: string | null, detail: string): RefusedSubjectToken {
  return { ok: false, reason, issuer, detail };
}

/** A failure to get the token's key: the issuer's outage, or no (single) key for the token's kid and alg. */
function reasonOf(error: unknown): RefusalReason {
  return error instanceof IssuerUnavailable ? 'issuer_unavailable' : 'bad_signature';
}

/** RFC 7515 section 4.1.9: `application/` may be left out; media types compare case-insensitively. */
function normalizedType(typ: string): string {
  return typ.toLowerCase().replace(/^application\//, '');
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
