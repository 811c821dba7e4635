import { Injectable, Logger } from '@nestjs/common';
import { AuditService } from '../audit/audit.service';
import { AppError, ERROR_REASONS, ErrorCode } from '../common/errors';
import { IdTokenRefusalReason, idTokenRefusal } from '../federation/id-token-rules';
import { IdTokenUses } from '../federation/id-token-uses';
import { FederatedMember, FederatedPeople } from '../federation/people';
import type { RefusalReason } from '../federation/subject-token-rules';
import { SubjectClaims, SubjectTokenVerifier } from '../federation/subject-token-verifier';
import type { IssuerKind } from '../federation/trusted-issuer.entity';
import { roleMask } from '../identity/roles';
import { Metrics } from '../metrics/metrics';
import {
  MatchedWorkloadIdentity,
  NamedRefusal,
  WorkloadIdentitiesService,
} from '../workload-identities/workload-identities.service';
import { CredentialUsageCounter } from '../credentials/credential-usage.counter';
import { CountedRefusal } from './exchange-outcome';
import { TokenAttemptLimiter } from './token-attempt-limiter';
import type { ExchangeClient } from './token-exchange.service';
import { ApiKeyExchange, TokenService } from './token.service';
import { IdentityService } from '../identity/identity.service';

/** RFC 8693 section 3: the token types of the exchange. */
export const TokenTypes = {
  idToken: 'urn:ietf:params:oauth:token-type:id_token',
  jwt: 'urn:ietf:params:oauth:token-type:jwt',
  accessToken: 'urn:ietf:params:oauth:token-type:access_token',
} as const;

/**
 * Why a subject token was not exchanged: the verifier's reasons, the two of the workload identities, the person's, and
 * those of an ID token (not one issued to Gatehouse, or used before).
 */
export type SubjectRefusalReason =
  | RefusalReason
  | 'no_workload_identity'
  | 'ambiguous_workload_identity'
  | NamedRefusal
  | 'no_email'
  | 'email_not_verified'
  | 'email_domain_not_allowed'
  | 'no_access'
  | IdTokenRefusalReason
  | 'replayed'
  | 'member_removed';

/** A person's session token lives an hour, as the console's (FEDERATION: at most 1 h). */
const SESSION_SECONDS = 3600;

/** The one answer to every refused subject token: no detail tells which check failed (the audit log has it). */
export const SUBJECT_TOKEN_REFUSED = ERROR_REASONS.subject_token_refused.message;

/**
 * A refused subject token: 400 `invalid_grant`, counted by the failure limit like a refused key. Audited in each of
 * `organizationIds` (the organizations it concerns, when a verified token tells), with the identity it named if any.
 */
export class SubjectTokenRefused extends CountedRefusal {
  readonly organizationIds: readonly string[];

  constructor(
    readonly outcome: SubjectRefusalReason,
    organizationIds: string | readonly string[] | null = null,
    readonly workloadIdentityId: string | null = null,
  ) {
    super('subject_token_refused');
    this.organizationIds =
      organizationIds === null ? [] : typeof organizationIds === 'string' ? [organizationIds] : organizationIds;
  }
}

/** The issuer's keys could not be had in time: nothing is known about the token (503, not counted). */
function issuerUnavailable(): AppError {
  return new AppError('identity_provider_unavailable');
}

/**
 * RFC 8693 token exchange (docs/federation.md#token-exchange): a subject token of a trusted issuer becomes a Gatehouse
 * token. A workload's JWT taken by the workload identity it names (`client_id`), or matching one reachable by subject,
 * becomes an access token of the identity's owner, as an API key's exchange does (TokenExchangeService.grant, the
 * identity's id as `client_id`); a person's ID token becomes a session
 * token of the member the person is (FederatedPeople). Within the client address's failure limit, shared with the
 * key exchanges; every refusal is one `invalid_grant`, its reason in the metrics and the audit log (or a log line when
 * the token names no organization).
 */
@Injectable()
export class SubjectTokenExchangeService {
  private readonly logger = new Logger(SubjectTokenExchangeService.name);

  constructor(
    private readonly verifier: SubjectTokenVerifier,
    private readonly identities: WorkloadIdentitiesService,
    private readonly people: FederatedPeople,
    private readonly limiter: TokenAttemptLimiter,
    private readonly audit: AuditService,
    private readonly metrics: Metrics,
    private readonly identity: IdentityService,
    private readonly tokens: TokenService,
    private readonly idTokenUses: IdTokenUses,
    private readonly usage: CredentialUsageCounter,
  ) {}

  /**
   * A workload's JWT: what an access token through its workload identity may get, as a key's exchange. `clientId`
   * (the form's `client_id`) names the identity: then only that one is considered (WorkloadIdentitiesService.named);
   * without it, the identities reachable by subject alone are matched (docs/adr/0043).
   */
  workload(subjectToken: string, client: ExchangeClient, clientId?: string): Promise<ApiKeyExchange> {
    return this.refusalsRecorded(client, () =>
      this.limiter.attempt(client.address, subjectToken, async () => {
        const checkedAtMs = Date.now();
        const verified = await this.verified(subjectToken, 'workloads', checkedAtMs);
        const identity =
          clientId === undefined
            ? await this.matched(verified.issuers, verified.claims, checkedAtMs)
            : await this.named(clientId, verified.issuers, verified.claims, checkedAtMs);
        // Audited `workload_identity.exchanged` by the grant once a token is minted: `scope` or `resource` may still
        // refuse it (TokenExchangeService.grant).
        return {
          userId: identity.userId,
          organizationId: identity.organizationId,
          credentialId: identity.id,
          workloadIdentity: true,
          subject: verified.claims.sub,
          lifetimeSeconds: identity.accessTokenLifetime,
          scopes: identity.scopes,
          rolePermissions: roleMask(identity.role),
          expiresAtMs: identity.expiresAtMs,
          checkedAtMs,
          clientAddress: client.address,
        } satisfies ApiKeyExchange;
      }),
    );
  }

  /**
   * A person's ID token: the member a session token is for. An ID token issued to Gatehouse (idTokenRefusal), used
   * once: its use is recorded before the member is looked up, so that a replay reads or creates nothing more.
   */
  person(subjectToken: string, client: ExchangeClient): Promise<FederatedMember> {
    return this.refusalsRecorded(client, async () => {
      const use = await this.limiter.attempt(client.address, subjectToken, async () => {
        const verified = await this.verified(subjectToken, 'people', Date.now());
        // A people issuer serves one organization (docs/federation.md#trusted-issuers).
        const issuer = verified.issuers[0];
        const refusal = idTokenRefusal(verified.header, verified.claims, issuer.clientId ?? issuer.audience);
        if (refusal !== null) {
          this.logger.log(
            { reason: refusal.reason, issuer: issuer.issuer, detail: refusal.detail },
            'ID token refused',
          );
          throw new SubjectTokenRefused(refusal.reason, issuer.organizationId);
        }
        if (!(await this.idTokenUses.first(verified.claims, subjectToken))) {
          throw new SubjectTokenRefused('replayed', issuer.organizationId);
        }
        const member = await this.people.member(issuer, verified.claims, { id: client.requestId, ip: client.address });
        if (!member.ok) throw new SubjectTokenRefused(member.refusal, issuer.organizationId);
        return { member, taken: false };
      });
      // Identical attempts in flight share the check above: the first to get its outcome uses the token, the others
      // replay it (and count as failures, as a joined refusal does).
      if (use.taken) {
        await this.limiter.countFailure(client.address);
        throw new SubjectTokenRefused('replayed', use.member.organizationId);
      }
      use.taken = true;
      return use.member;
    });
  }

  /**
   * A session token for a person's member, as the console's sign-in mints it (1 h), once a token issued now is valid
   * (a sign-out in this second waits for the next); 400 `invalid_grant` when the member was removed meanwhile.
   */
  async session(member: FederatedMember): Promise<{ token: string; lifetimeSeconds: number }> {
    if ((await this.identity.readyForSession(member.organizationId, member.userId)) === null) {
      this.metrics.tokenExchange('subject_token_no_access');
      throw new SubjectTokenRefused('no_access', member.organizationId);
    }
    const token = await this.tokens.mint({
      userId: member.userId,
      organizationId: member.organizationId,
      lifetimeSeconds: SESSION_SECONDS,
      tokenUse: 'session',
    });
    this.metrics.tokenExchange('success');
    return { token, lifetimeSeconds: SESSION_SECONDS };
  }

  /** The identity reachable by subject the token matches; refused when none or several do. */
  private async matched(
    issuers: ReadonlyArray<{ id: string; organizationId: string }>,
    claims: SubjectClaims,
    nowMs: number,
  ): Promise<MatchedWorkloadIdentity> {
    const match = await this.identities.matching(issuers, claims, nowMs);
    if (match.outcome === 'none') throw new SubjectTokenRefused('no_workload_identity', singleOrganization(issuers));
    // Each organization whose identities matched learns that its workload was refused.
    if (match.outcome === 'ambiguous') {
      const organizations = [...new Set(match.candidates.map((candidate) => candidate.organizationId))];
      throw new SubjectTokenRefused('ambiguous_workload_identity', organizations);
    }
    return match.identity;
  }

  /**
   * The identity `client_id` names, if it takes the token. Refused otherwise, with the one answer: audited in the named
   * identity's organization (the reason says which check failed, the caller never learns it), or, for an unknown
   * identity, in the organization the token's trusted entry names when it names one.
   */
  private async named(
    clientId: string,
    issuers: ReadonlyArray<{ id: string; organizationId: string }>,
    claims: SubjectClaims,
    nowMs: number,
  ): Promise<MatchedWorkloadIdentity> {
    const named = await this.identities.named(clientId, issuers, claims, nowMs);
    if (named.outcome === 'matched') return named.identity;
    if (named.identity === null) throw new SubjectTokenRefused(named.reason, singleOrganization(issuers));
    throw new SubjectTokenRefused(named.reason, named.identity.organizationId, named.identity.id);
  }

  private async verified(token: string, kind: IssuerKind, nowMs: number) {
    const outcome = await this.verifier.verify(token, kind, nowMs);
    if (outcome.ok) return outcome;
    if (outcome.reason === 'issuer_unavailable') {
      this.logger.warn({ issuer: outcome.issuer, detail: outcome.detail }, 'identity provider unavailable');
      throw issuerUnavailable();
    }
    this.logger.log(
      { reason: outcome.reason, issuer: outcome.issuer, detail: outcome.detail },
      'subject token refused',
    );
    throw new SubjectTokenRefused(outcome.reason);
  }

  /** Counts every outcome but success (the grant counts that); audits a refusal that names an organization. */
  private async refusalsRecorded<T>(client: ExchangeClient, exchange: () => Promise<T>): Promise<T> {
    try {
      return await exchange();
    } catch (error) {
      if (error instanceof SubjectTokenRefused) {
        this.metrics.tokenExchange(`subject_token_${error.outcome}`);
        // A verified token refused by the identity `client_id` named: a refused use of that identity.
        if (error.workloadIdentityId !== null && error.organizationIds.length === 1) {
          const [organizationId] = error.organizationIds;
          this.usage.count('workload_identity', error.workloadIdentityId, organizationId, client.channel, false);
        }
        if (error.organizationIds.length > 0) {
          const target =
            error.workloadIdentityId === null
              ? {}
              : { targetType: 'workload_identity' as const, targetId: error.workloadIdentityId };
          await this.audit.recordAll(
            error.organizationIds.map((organizationId) => ({
              action: 'token.exchange_failed' as const,
              organizationId,
              reason: `subject_token_${error.outcome}`,
              ...target,
              request: { id: client.requestId, ip: client.address },
            })),
          );
        }
      } else if (error instanceof AppError && error.code === ErrorCode.UNAVAILABLE) {
        this.metrics.tokenExchange('unavailable');
      } else if (error instanceof AppError && error.code === ErrorCode.RESOURCE_EXHAUSTED) {
        this.metrics.tokenExchange('rate_limited');
      }
      throw error;
    }
  }
}

function singleOrganization(entries: ReadonlyArray<{ organizationId: string }>): string | null {
  const organizations = new Set(entries.map((entry) => entry.organizationId));
  return organizations.size === 1 ? [...organizations][0] : null;
}
