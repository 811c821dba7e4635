import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { AuditEntry, AuditService } from '../audit/audit.service';
import type { RequestContext } from '../audit/request-context';
import { AppError, ErrorReason, unauthenticatedBearer } from '../common/errors';
import { ownerQueue } from '../credentials/credential-owner';
import { CredentialUseRecorder } from '../credentials/credential-use.recorder';
import type { CredentialStore } from '../credentials/credentials.repository';
import { groupCommitted } from '../database/group-commit';
import { DirectTransaction, Transaction, UnitOfWork } from '../database/unit-of-work';
import { OAuthGrant } from './grant.entity';
import {
  CODE_PREFIX,
  covers,
  newRefreshToken,
  newSecret,
  pkceMatches,
  refreshChainOf,
  REFRESH_PREFIX,
  s256Challenge,
  scopeSet,
  secretHash,
} from './grant-secrets';
import {
  BatchRedemption,
  CodeBinding,
  FirstChain,
  Grant,
  GrantsRepository,
  LiveGrant,
  PublicClientCondition,
  Redeemed,
  RefreshBinding,
} from './grants.repository';

/** A code works once, for this long (OAuth 2.1 section 4.1.2 recommends at most 10 minutes; MCP.md asks 60 s). */
export const CODE_SECONDS = 60;

type Owner = { organizationId: string; userId: string };

/** What the person allowed on the consent page: the client, where it gets the code, and for what. */
export interface Consent {
  clientId: string;
  clientName: string;
  redirectUri: string;
  codeChallenge: string;
  resource: string;
  /** Asked scopes, declared by the resource server. */
  scopes: readonly string[];
}

/** What a token request presents with a code. */
export interface CodeRedemption {
  code: string;
  clientId: string | undefined;
  redirectUri: string | undefined;
  codeVerifier: string | undefined;
  resource: string | undefined;
}

/** A code's first refresh chain: its id, its first token and that token's hash, with the binding presented. */
function firstChain(presented: CodeRedemption): FirstChain & { token: string } {
  const id = randomUUID();
  const token = newRefreshToken(id);
  return {
    id,
    token,
    tokenHash: secretHash(token, REFRESH_PREFIX)!,
    clientId: presented.clientId,
    redirectUri: presented.redirectUri,
    challenge: s256Challenge(presented.codeVerifier),
    resource: presented.resource,
  };
}

/** A refresh token's chain, and the token that replaces it. */
interface ChainStep {
  chain: string;
  next: string;
  nextHash: string;
}

/** A code (`presented`) or a refresh token (`refresh`, for `clientId`) to redeem, by its hash. */
interface Redemption {
  hash: string;
  presented: CodeRedemption | null;
  refresh: ChainStep | null;
  clientId: string | null;
  client: ClientCheck | null;
  now: Date;
}

/** A grant's access token to mint, and the refresh token that came with it. */
export interface GrantTokens {
  grantId: string;
  organizationId: string;
  userId: string;
  clientId: string;
  resource: string;
  scope: string;
  lifetimeSeconds: number;
  refreshToken: string;
}

/**
 * A registered public client named by a token request without a secret: the redemption's statement checks it
 * (`condition`), and `refusal` throws its refusal (client_unknown and the like) when it is what was wrong.
 */
export interface ClientCheck {
  condition: PublicClientCondition;
  refusal: () => Promise<void>;
}

/** RFC 6749 section 5.2's invalid_grant, with a reason clients can branch on. */
export function invalidGrant(description: string, reason: ErrorReason): AppError {
  return new AppError(reason, { message: description });
}

export function grantNotFound(): AppError {
  return new AppError('grant_not_found');
}

/**
 * Grants (docs/mcp.md#grants): every consent is one, per person, client and resource server; codes and refresh tokens
 * are issued under it and stored hashed, and end with it. Revoking one (the person, an admin, a reused code or refresh
 * token; a member's removal through the credential core, GrantsRepository being a kind of it) is audited
 * `grant.revoked`, which the revocation feed turns into a credential-change event.
 */
@Injectable()
export class GrantsService {
  /**
   * A redemption (docs/adr/0061-code-and-refresh-cost.md). SQLite: the codes and refresh tokens of one event-loop turn
   * in one transaction, in turn (a code or token presented twice in one turn is redeemed by the first and found used by
   * the second, as in two transactions). PostgreSQL: each one statement committed alone, no transaction around it
   * (the UPDATE's row lock orders two redemptions of one code).
   */
  private readonly redemptions: (redemption: Redemption) => Promise<GrantTokens | AppError | null>;

  constructor(
    private readonly grants: GrantsRepository,
    private readonly audit: AuditService,
    private readonly unitOfWork: UnitOfWork,
    private readonly uses: CredentialUseRecorder,
  ) {
    const alone = unitOfWork.autocommit;
    this.redemptions = groupCommitted<Redemption, GrantTokens | AppError | null>((batch) =>
      alone !== null
        ? this.redeemAtOnce(batch, alone)
        : unitOfWork.direct(async (tx) => {
            const outcomes: Array<GrantTokens | AppError | null> = [];
            for (const redemption of batch) outcomes.push(await this.redeemInside(redemption, tx));
            return outcomes;
          }),
    );
  }

  /** Whether an active grant already covers these scopes (the consent is remembered). */
  async remembered(owner: Owner, clientId: string, resource: string, scopes: readonly string[]): Promise<boolean> {
    const grant = await this.grants.activeGrant(owner, clientId, resource);
    return grant !== null && covers(grant.scope, scopes);
  }

  /**
   * The person allowed it: their grant for the client and resource (created, or widened to the asked scopes, audited
   * `grant.granted`), and a code bound to the client, redirect URI, PKCE challenge, resource and scopes.
   */
  async allow(owner: Owner, consent: Consent, request?: RequestContext, now = new Date()): Promise<string> {
    // Under the owner's lock and in their queue, as every kind's creation: a member's removal revokes the grant or
    // finds it refused (docs/api.md#removing-a-member).
    const grantId = await this.unitOfWork.run(
      async (tx) => {
        await this.grants.lockOwner(owner, tx);
        const existing = await this.grants.activeGrant(owner, consent.clientId, consent.resource);
        if (existing !== null && covers(existing.scope, consent.scopes)) return existing.id;
        const scope = scopeSet([existing?.scope ?? '', ...consent.scopes].join(' ')).join(' ');
        let id: string;
        if (existing === null) {
          id = randomUUID();
          const grant = Object.assign(new OAuthGrant(), {
            id,
            organizationId: owner.organizationId,
            userId: owner.userId,
            clientId: consent.clientId,
            clientName: consent.clientName,
            resource: consent.resource,
            scope,
            status: 'active',
            createdAt: now,
            lastUsedAt: null,
            revokedAt: null,
          });
          if (!(await this.grants.insert(grant, tx))) return unauthenticatedBearer('member_removed');
        } else {
          id = existing.id;
          await this.grants.updateScope(id, scope, consent.clientName, tx);
        }
        await this.audit.record(
          this.entry('grant.granted', owner, id, owner.userId, consent.clientId.slice(0, 1024), request),
          tx,
        );
        return id;
      },
      { queueKey: ownerQueue(owner) },
    );
    if (grantId instanceof AppError) throw grantId;
    const code = newSecret(CODE_PREFIX);
    await this.grants.pruneCodes(new Date(now.getTime() - CODE_SECONDS * 1000));
    await this.grants.insertCode(
      secretHash(code, CODE_PREFIX)!,
      {
        grantId,
        clientId: consent.clientId,
        redirectUri: consent.redirectUri,
        codeChallenge: consent.codeChallenge,
        resource: consent.resource,
        scope: scopeSet(consent.scopes.join(' ')).join(' '),
      },
      new Date(now.getTime() + CODE_SECONDS * 1000),
    );
    return code;
  }

  /**
   * The code's token request (OAuth 2.1 section 4.1.3): used once (a second use ends the grant), unexpired, by the
   * client it was issued to, with its redirect URI, PKCE verifier and resource; the grant still active and its person a
   * member. A refused code stays used. `client`: a registered public client whose check is the redemption's own (it
   * stays unused when the client is refused); its `refusal` says why, before the code's reason is looked for.
   */
  async redeem(presented: CodeRedemption, client: ClientCheck | null = null, now = new Date()): Promise<GrantTokens> {
    const hash = secretHash(presented.code, CODE_PREFIX);
    if (hash === null) {
      await client?.refusal();
      throw invalidGrant('the code is not valid', 'code_invalid');
    }
    const outcome = await this.redemptions({ hash, presented, refresh: null, clientId: null, client, now });
    if (outcome instanceof AppError) throw outcome;
    if (outcome !== null) return outcome;
    await client?.refusal();
    const spent = await this.grants.spentCodeReason(hash, now);
    if (spent === 'expired') throw invalidGrant('the code has expired', 'code_expired');
    if (typeof spent === 'string') throw invalidGrant('the code is not valid', 'code_invalid');
    await this.unitOfWork.run((tx) => this.revokeInside(spent.used, 'code_reused', now, tx));
    throw invalidGrant('the code was used already: its grant is revoked', 'code_reused');
  }

  /**
   * A refresh token (OAuth 2.1 section 4.3): used once and replaced by the next of its chain; a token of the chain that
   * is not its current one ends the whole grant (RFC 9700 section 4.14.2). The client must be the grant's; `client` as
   * for redeem.
   */
  async refresh(
    token: string,
    clientId: string,
    client: ClientCheck | null = null,
    request?: RequestContext,
    now = new Date(),
  ): Promise<GrantTokens> {
    const hash = secretHash(token, REFRESH_PREFIX);
    const chain = refreshChainOf(token);
    if (hash === null || chain === null) {
      await client?.refusal();
      throw invalidGrant('the refresh token is not valid', 'refresh_token_invalid');
    }
    const next = newRefreshToken(chain);
    const refresh = { chain, next, nextHash: secretHash(next, REFRESH_PREFIX)! };
    const outcome = await this.redemptions({ hash, presented: null, refresh, clientId, client, now });
    if (outcome instanceof AppError) throw outcome;
    if (outcome === null) {
      await client?.refusal();
      const spent = await this.grants.spentRefreshReason(chain);
      if (spent === 'unknown') throw invalidGrant('the refresh token is not valid', 'refresh_token_invalid');
      await this.unitOfWork.run((tx) => this.revokeInside(spent.used, 'refresh_token_reused', now, tx));
      throw invalidGrant('the refresh token was used already: its grant is revoked', 'refresh_token_reused');
    }
    this.audit.recordSoon(this.entry('grant.refreshed', outcome, outcome.grantId, outcome.userId, null, request));
    return outcome;
  }

  /** Grants with this instance's last uses not written yet (docs/api.md#usage-fields). */
  async listForOwner(owner: Owner): Promise<Grant[]> {
    return (await this.grants.listForOwner(owner)).map((grant) => this.uses.withPendingTime(grant));
  }

  async listForOrganization(organizationId: string): Promise<Grant[]> {
    return (await this.grants.listForOrganization(organizationId)).map((grant) => this.uses.withPendingTime(grant));
  }

  /**
   * Revokes one of the person's grants (404 for anyone else's, or another organization's), or as an admin any grant
   * of the organization: its access tokens are refused at once, its refresh tokens deleted.
   */
  async revoke(
    by: Owner,
    id: string,
    options: { asAdmin: boolean; request?: RequestContext },
    now = new Date(),
  ): Promise<Grant> {
    const grant = await this.grants.findById(id);
    const visible =
      grant !== null && grant.organizationId === by.organizationId && (options.asAdmin || grant.userId === by.userId);
    if (!visible) throw grantNotFound();
    if (grant.status === 'revoked') return grant;
    await this.unitOfWork.run(async (tx) => {
      const ids = await this.grants.revoke(grant, id, now, tx);
      const reason = grant.userId === by.userId ? 'user' : 'admin';
      await this.audit.recordAll(
        ids.map((revoked) => this.entry('grant.revoked', grant, revoked, by.userId, reason, options.request)),
        tx,
      );
    });
    return Object.assign(grant, { status: 'revoked', revokedAt: now });
  }

  /**
   * A client's removal (docs/mcp.md#clients): every grant to it revoked, in any organization; the entries to record
   * with the removal (reason `client_removed`).
   */
  async revokeClientGrants(clientId: string, at: Date, tx: Transaction): Promise<AuditEntry[]> {
    const revoked = await this.grants.revokeForClient(clientId, at, tx);
    return revoked.map((grant) => this.entry('grant.revoked', grant, grant.id, null, 'client_removed'));
  }

  private async revokeInside(grantId: string, reason: string, now: Date, tx: Transaction): Promise<void> {
    const grant = await this.grants.findById(grantId);
    if (grant === null) return;
    const ids = await this.grants.revoke(grant, grantId, now, tx);
    await this.audit.recordAll(
      ids.map((id) => this.entry('grant.revoked', grant, id, null, reason)),
      tx,
    );
  }

  /**
   * Redeems the code (`presented`) or refresh token (for `clientId`), once: the tokens to mint, a refusal (the code or
   * token then stays used), or null when it redeemed nothing (unknown, expired, used, or the client refused).
   */
  private async redeemInside(redemption: Redemption, tx: DirectTransaction): Promise<GrantTokens | AppError | null> {
    const { hash, presented, refresh, now } = redemption;
    const condition = redemption.client?.condition ?? null;
    if (presented !== null) {
      const first = firstChain(presented);
      const found = await this.grants.redeemCode(hash, now, condition, tx);
      return this.redeemed(redemption, found, first, tx);
    }
    const found = await this.grants.redeemRefreshToken(refresh!.chain, hash, refresh!.nextHash, now, condition, tx);
    return this.redeemed(redemption, found, null, tx);
  }

  /**
   * PostgreSQL: a turn's codes in one statement and its refreshes in another, each committed alone (one round trip
   * and one commit for many requests); then each item's outcome as redeemInside gives it.
   */
  private async redeemAtOnce(
    batch: readonly Redemption[],
    alone: DirectTransaction,
  ): Promise<Array<GrantTokens | AppError | null>> {
    const now = batch[0].now;
    const items = batch.map((redemption, ord) => ({
      ord,
      redemption,
      first: redemption.presented === null ? null : firstChain(redemption.presented),
    }));
    const asked = (codes: boolean): BatchRedemption[] =>
      items
        .filter((item) => (item.first !== null) === codes)
        .map(({ ord, redemption, first }) => ({
          ord,
          hash: redemption.hash,
          client: redemption.client?.condition ?? null,
          first: first ?? undefined,
          chain:
            redemption.refresh === null
              ? undefined
              : { id: redemption.refresh.chain, nextHash: redemption.refresh.nextHash },
        }));
    const [codes, refreshes] = await Promise.all(
      (['codes', 'refreshes'] as const).map((kind) => {
        const some = asked(kind === 'codes');
        return some.length === 0 ? Promise.resolve(null) : this.grants.redeemAtOnce(kind, some, now, alone);
      }),
    );
    return Promise.all(
      items.map(({ ord, redemption, first }) =>
        this.redeemed(redemption, (first === null ? refreshes : codes)?.get(ord) ?? null, first, alone),
      ),
    );
  }

  /** What a redemption gives once its statement found (or did not find) the code or refresh token. */
  private async redeemed(
    redemption: Redemption,
    found: Redeemed<CodeBinding> | Redeemed<RefreshBinding> | null,
    first: (FirstChain & { token: string }) | null,
    tx: DirectTransaction,
  ): Promise<GrantTokens | AppError | null> {
    if (found === null) return null;
    const { grantId, scope } = found.redeemed;
    if (first !== null) {
      const refused = this.bindingRefusal(found.redeemed as CodeBinding, redemption.presented!);
      if (refused !== null) return refused;
      return this.issue(grantId, found.live, scope, redemption.now, tx, { first, chained: found.chained });
    }
    const next = { clientId: redemption.clientId!, next: redemption.refresh!.next };
    return this.issue(grantId, found.live, scope, redemption.now, tx, next);
  }

  private bindingRefusal(binding: CodeBinding, presented: CodeRedemption): AppError | null {
    if (presented.clientId !== binding.clientId) {
      return invalidGrant('the code was issued to another client', 'client_mismatch');
    }
    if (presented.redirectUri !== binding.redirectUri) {
      return invalidGrant('redirect_uri differs from the authorization request', 'redirect_uri_mismatch');
    }
    if (!pkceMatches(presented.codeVerifier, binding.codeChallenge)) {
      return invalidGrant('code_verifier does not match the code_challenge', 'pkce_mismatch');
    }
    if (presented.resource !== undefined && presented.resource !== binding.resource) {
      return invalidGrant('resource differs from the authorization request', 'resource_mismatch');
    }
    return null;
  }

  /**
   * The grant's tokens to mint with a refresh token: for a code, the first of a new chain (stored in the same
   * transaction, unless the redemption's statement stored it); for a refresh, the chain's next (stored by its
   * redemption), only to the grant's client. Its last use goes to the batched writer.
   */
  private async issue(
    grantId: string,
    grant: LiveGrant | null,
    scope: string,
    now: Date,
    tx: DirectTransaction,
    refresh: { clientId: string; next: string } | { first: FirstChain & { token: string }; chained: boolean },
  ): Promise<GrantTokens | AppError> {
    if (grant === null) return invalidGrant('the grant was revoked', 'grant_revoked');
    if ('clientId' in refresh && grant.clientId !== refresh.clientId) {
      return invalidGrant('the refresh token was issued to another client', 'client_mismatch');
    }
    let refreshToken: string;
    if ('first' in refresh) {
      refreshToken = refresh.first.token;
      if (!refresh.chained) {
        await this.grants.insertRefreshChain(refresh.first.id, refresh.first.tokenHash, grantId, scope, now, tx);
      }
    } else {
      refreshToken = refresh.next;
    }
    // Recorded through the credential core's store (the repository's own findById differs from the core's).
    const store: CredentialStore<OAuthGrant> = this.grants;
    this.uses.record(grantId, { at: now, ip: null, userAgent: null, store });
    return {
      grantId,
      organizationId: grant.organizationId,
      userId: grant.userId,
      clientId: grant.clientId,
      resource: grant.resource,
      scope,
      lifetimeSeconds: grant.access.accessTokenLifetime,
      refreshToken,
    };
  }

  private entry(
    action: 'grant.granted' | 'grant.refreshed' | 'grant.revoked',
    owner: Owner,
    grantId: string,
    actorUserId: string | null,
    reason: string | null,
    request?: RequestContext,
  ): AuditEntry {
    return {
      action,
      organizationId: owner.organizationId,
      actorUserId,
      targetType: 'grant',
      targetId: grantId,
      reason,
      request,
    };
  }
}
