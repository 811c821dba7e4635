import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { AuditService } from '../audit/audit.service';
import type { RequestContext } from '../audit/request-context';
import { AppError, permissionDenied, unauthenticatedBearer } from '../common/errors';
import { InjectConfig } from '../config/config.module';
import type { AppConfiguration } from '../config/configuration';
import { UnitOfWork } from '../database/unit-of-work';
import type { TrustedIssuer } from '../federation/trusted-issuer.entity';
import { TrustedIssuersService } from '../federation/trusted-issuers.service';
import { latestExpiry, requestedExpiry } from '../identity/credential-lifetime';
import { IdentityService } from '../identity/identity.service';
import type { MembershipAccess } from '../identity/member-access';
import { Permission, PermissionMask, permissionMask, Role } from '../identity/roles';
import { isExpired, WorkloadIdentity } from './workload-identity.entity';
import {
  checkedConditions,
  checkedSubject,
  conditionsMet,
  MatchCandidate,
  MatchOutcome,
  selectMatch,
  SubjectTokenClaims,
} from './workload-identity-matching';
import { IdentityCandidate, WorkloadIdentitiesRepository } from './workload-identities.repository';
import { actor, CredentialOwner, ownerQueue } from '../credentials/credential-owner';
import { CredentialsService } from '../credentials/credentials.service';

/** Whose identities: every query on a user's identities is scoped by both. */
export type IdentityOwner = CredentialOwner;

/** The caller of a creation: whose identities, and what the request may do (a Principal fits). */
export interface IdentityCreator extends IdentityOwner {
  permissions: PermissionMask;
  /** With an access token, its credential's expiry (null: none): the identities it makes expire no later. */
  credentialExpiresAtMs?: number | null;
}

/** A creation's fields, as the body gave them (the DTO checked their types). */
export interface NewWorkloadIdentity {
  label: string;
  trustedIssuerId: string;
  subject: string;
  /** Checked here, each rule with its own message (workload-identity-matching.ts). */
  conditions?: unknown;
  scopes: Permission[];
  /** Absent or null: none, or the organization's maximum under a key policy. */
  expiresAt?: string | null;
}

/**
 * An identity whose tokens may be used now: ACTIVE, not expired, its owner a member; with what a token minted through
 * it may do (the owner's role AND its scopes) and how long it may live (the organization's token lifetime, never past
 * expiresAtMs).
 */
export interface UsableWorkloadIdentity {
  id: string;
  organizationId: string;
  userId: string;
  scopes: PermissionMask;
  /** expires_at in milliseconds since the epoch; null: never. */
  expiresAtMs: number | null;
  /** The owner's role in the organization, read now. */
  role: Role;
  /** The organization's access-token lifetime, in seconds. */
  accessTokenLifetime: number;
}

/** A usable identity that a subject token matched, with what it matched on. */
export interface MatchedWorkloadIdentity extends UsableWorkloadIdentity, MatchCandidate {
  trustedIssuerId: string;
}

/** `matching`'s answer: one identity, none, or several equally specific ones (or in several organizations). */
export type WorkloadIdentityMatch = MatchOutcome<MatchedWorkloadIdentity>;

/**
 * Why the identity an exchange named does not take the token (docs/workload-identities.md#naming-the-identity): no such
 * identity; its trusted entry is not one the token was accepted for (another issuer, another organization, another
 * audience); another `sub`; a condition not met; revoked, expired, or its owner no longer a member.
 */
export type NamedRefusal =
  | 'unknown_workload_identity'
  | 'workload_identity_wrong_issuer'
  | 'workload_identity_wrong_subject'
  | 'workload_identity_conditions_not_met'
  | 'workload_identity_not_usable';

/** `named`'s answer: the identity, or why not and, when the identity exists, its id and organization. */
export type NamedWorkloadIdentity =
  | { outcome: 'matched'; identity: MatchedWorkloadIdentity }
  | { outcome: 'refused'; reason: NamedRefusal; identity: { id: string; organizationId: string } | null };

/** An identity's id as a token's `client_id` names it: a UUID (any case). */
const IDENTITY_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * Workload identities (docs/workload-identities.md): created by a member within their own permissions and the
 * organization's key policy, listed, read and revoked by their owner, each change audited in its transaction; and the
 * reads the token exchange needs (`matching`, `named`, `recordUse`); a token minted through one is checked by the token
 * authenticator, through the credential core's kind store (WorkloadIdentitiesRepository.read).
 */
@Injectable()
export class WorkloadIdentitiesService {
  private readonly maxActivePerUser: number;

  constructor(
    private readonly identities: WorkloadIdentitiesRepository,
    private readonly credentials: CredentialsService,
    private readonly trustedIssuers: TrustedIssuersService,
    private readonly identity: IdentityService,
    private readonly audit: AuditService,
    private readonly unitOfWork: UnitOfWork,
    @InjectConfig() config: AppConfiguration,
  ) {
    // The keys' cap, per owner and organization, for identities apart
    // (docs/workload-identities.md#post-v1workload-identities).
    this.maxActivePerUser = config.apiKeys.maxActivePerUser;
  }

  /** POST /v1/workload-identities: every refusal is a 400 with its reason (403 for a scope), nothing stored. */
  async create(
    creator: IdentityCreator,
    input: NewWorkloadIdentity,
    request?: RequestContext,
  ): Promise<WorkloadIdentity> {
    const now = new Date();
    const subject = checkedSubject(input.subject);
    const conditions = checkedConditions(input.conditions);
    const organization = await this.identity.organizationById(creator.organizationId);
    const issuer = (await this.trustedIssuers.list(organization.name)).find(
      (entry) => entry.id === input.trustedIssuerId,
    );
    if (issuer === undefined) throw new AppError('workload_identity_issuer_not_found');
    if (issuer.kind !== 'workloads') throw new AppError('workload_identity_issuer_not_for_workloads');
    // The same rules as a key's (docs/api.md#scopes): within the request's own permissions, no default.
    const scopes = permissionMask(input.scopes);
    if ((scopes & ~creator.permissions) !== 0) throw permissionDenied('scopes_exceed_permissions');
    const latest = latestExpiry(now, organization.maxKeyLifetimeDays, creator.credentialExpiresAtMs);
    const identity = Object.assign(new WorkloadIdentity(), {
      id: randomUUID(),
      organizationId: creator.organizationId,
      userId: creator.userId,
      trustedIssuerId: issuer.id,
      issuer: issuer.issuer,
      label: input.label,
      subject,
      conditions: JSON.stringify(conditions),
      status: 'ACTIVE' as const,
      // Reached only by an exchange that names it (docs/adr/0043-workload-identities-named-by-client-id.md).
      reachableBy: 'client_id' as const,
      scopes,
      expiresAt: requestedExpiry(input.expiresAt ?? null, now, latest),
      createdAt: now,
      updatedAt: now,
      lastUsedAt: null,
      lastUsedIp: null,
      revokedAt: null,
    });
    const outcome = await this.unitOfWork.run(
      async (tx) => {
        // The issuer held until this commits: a removal meanwhile waits and then revokes this identity too, or came
        // first and is seen here (TrustedIssuersService.remove).
        if (!(await this.trustedIssuers.holdEntry(issuer.organizationId, issuer.id, tx))) return 'issuer_removed';
        if (!(await this.identities.insertWithinActiveCap(identity, this.maxActivePerUser, tx))) return 'refused';
        await this.audit.record(
          {
            action: 'workload_identity.created',
            ...actor(creator),
            targetType: 'workload_identity',
            targetId: identity.id,
            request,
          },
          tx,
        );
        return 'created';
      },
      { queueKey: ownerQueue(creator) },
    );
    if (outcome === 'issuer_removed') throw new AppError('workload_identity_issuer_not_found');
    if (outcome === 'refused') throw await this.creationRefused(creator);
    return identity;
  }

  /** The trusted issuers of kind `workloads` of the caller's organization: what an identity may name. */
  async workloadIssuers(owner: IdentityOwner): Promise<TrustedIssuer[]> {
    const organization = await this.identity.organizationById(owner.organizationId);
    return (await this.trustedIssuers.list(organization.name)).filter((entry) => entry.kind === 'workloads');
  }

  /**
   * The token exchange without `client_id` (docs/workload-identities.md#for-the-token-exchange): the usable identity
   * reachable by subject (one that existed before identities were named) a verified subject token matches, among those
   * of `trustedIssuers` (the entries SubjectTokenVerifier accepted it for): `iss` and `sub` exactly and every condition;
   * the most specific wins, a tie (or matches in several organizations) is ambiguous. Identities created since are
   * never candidates: no one can take or block another's workload by making one.
   */
  async matching(
    trustedIssuers: ReadonlyArray<Pick<TrustedIssuer, 'id'>>,
    claims: SubjectTokenClaims,
    nowMs = Date.now(),
  ): Promise<WorkloadIdentityMatch> {
    if (typeof claims.sub !== 'string' || typeof claims.iss !== 'string') return { outcome: 'none' };
    const found = await this.identities.findCandidates(
      trustedIssuers.map((entry) => entry.id),
      claims.sub,
    );
    const usable = found.filter((candidate) => !isExpired(candidate.expiresAtMs, nowMs)).map(toMatched);
    return selectMatch(usable, claims);
  }

  /**
   * The token exchange with `client_id`: that identity only, however it is reached, if it takes the verified token: its
   * trusted entry among `trustedIssuers` (the token's issuer, its audience, an organization trusting it), `iss` and
   * `sub` exactly, every condition, ACTIVE, unexpired, its owner a member. One primary-key read, batched per turn.
   */
  async named(
    clientId: string,
    trustedIssuers: ReadonlyArray<Pick<TrustedIssuer, 'id'>>,
    claims: SubjectTokenClaims,
    nowMs = Date.now(),
  ): Promise<NamedWorkloadIdentity> {
    const found = IDENTITY_ID.test(clientId) ? await this.identities.findNamed(clientId.toLowerCase()) : undefined;
    if (found === undefined) return { outcome: 'refused', reason: 'unknown_workload_identity', identity: null };
    const refusal = (reason: NamedRefusal): NamedWorkloadIdentity => ({
      outcome: 'refused',
      reason,
      identity: { id: found.id, organizationId: found.organizationId },
    });
    const entry = trustedIssuers.find((issuer) => issuer.id.toLowerCase() === found.trustedIssuerId.toLowerCase());
    if (entry === undefined || found.issuer !== claims.iss) return refusal('workload_identity_wrong_issuer');
    if (found.subject !== claims.sub) return refusal('workload_identity_wrong_subject');
    const { ownerAccess } = found;
    if (found.status !== 'ACTIVE' || ownerAccess === null || isExpired(found.expiresAtMs, nowMs)) {
      return refusal('workload_identity_not_usable');
    }
    const identity = toMatched(Object.assign({}, found, { ownerAccess }));
    if (!conditionsMet(identity.conditions, claims)) return refusal('workload_identity_conditions_not_met');
    return { outcome: 'matched', identity };
  }

  /** A successful exchange through the identity: kept in memory, written in the recorder's next batch. */
  recordUse(id: string, clientAddress: string | null | undefined, at = new Date()): void {
    this.credentials.recordUse(this.identities, id, clientAddress ?? null, null, at);
  }

  /** Why the insert said no: the creator is no longer a member (401), or is at the cap (400). */
  private async creationRefused(owner: IdentityOwner): Promise<AppError> {
    if ((await this.identity.access(owner.organizationId, owner.userId)) === null)
      return unauthenticatedBearer('member_removed');
    return new AppError('workload_identity_limit_reached');
  }
}

/** What a token minted through the identity may do and how long it may live, read with its owner's membership. */
function usableOf(
  identity: Pick<UsableWorkloadIdentity, 'id' | 'organizationId' | 'userId' | 'scopes' | 'expiresAtMs'>,
  ownerAccess: MembershipAccess,
): UsableWorkloadIdentity {
  const { id, organizationId, userId, scopes, expiresAtMs } = identity;
  const { role, accessTokenLifetime } = ownerAccess;
  return { id, organizationId, userId, scopes, expiresAtMs, role, accessTokenLifetime };
}

function toMatched(candidate: IdentityCandidate): MatchedWorkloadIdentity {
  const { trustedIssuerId, issuer, subject } = candidate;
  const conditions = JSON.parse(candidate.conditions) as MatchCandidate['conditions'];
  return Object.assign(usableOf(candidate, candidate.ownerAccess), { trustedIssuerId, issuer, subject, conditions });
}
