import { Injectable, Logger } from '@nestjs/common';
import { ApiKeysService } from '../api-keys/api-keys.service';
import type { ParsedApiKey } from '../api-keys/api-key-codec';
import { AuditService } from '../audit/audit.service';
import { AppError, ErrorCode } from '../common/errors';
import { CredentialUsageCounter } from '../credentials/credential-usage.counter';
import type { UsageChannel } from '../credentials/credential-usage.entity';
import { Metrics } from '../metrics/metrics';
import { roleMask } from '../identity/roles';
import { ResourceServersService } from '../resource-servers/resource-servers.service';
import { WorkloadIdentitiesService } from '../workload-identities/workload-identities.service';
import { AccessTokenResponse } from './dto/access-token.response';
import { refusalOutcome } from './exchange-outcome';
import { AddressNotAllowed, ExchangeRefused, KeyExchangeRules } from './key-exchange';
import { TokenAuthenticator, TokenRefusal } from './token-authenticator';
import { TokenAttemptLimiter } from './token-attempt-limiter';
import { AccessGrant, ApiKeyExchange, TokenNarrowing, TokenService } from './token.service';

/** A well-formed key: its parts, and the value as presented (the failure limit's key). */
export type PresentedKey = [ParsedApiKey, string];

/** Who asks, for the failure limit, the audit trail and the key's usage fields; and where, for usage over time. */
export interface ExchangeClient {
  address: string | undefined;
  requestId: string;
  userAgent: string | undefined;
  /** POST /v1/token (`key_exchange`) or POST /oauth/token (`oauth_token`). */
  channel: Extract<UsageChannel, 'key_exchange' | 'oauth_token'>;
}

/** Raised when `resource` names no registered resource server (400 `unknown resource`; OAuth: invalid_target). */
export class UnknownResource extends AppError {
  constructor() {
    super('unknown_resource');
  }
}

/**
 * The exchange of an API key for an access token, whichever protocol carries it: POST /v1/token (ApiKey header, JSON)
 * and POST /oauth/token (client credentials, form). One code path for the rules, the failure limit, the audit records
 * and the metrics (docs/api.md#post-v1token, docs/resource-servers.md#client-credentials).
 */
@Injectable()
export class TokenExchangeService {
  private readonly logger = new Logger(TokenExchangeService.name);

  constructor(
    private readonly apiKeys: ApiKeysService,
    private readonly rules: KeyExchangeRules,
    private readonly limiter: TokenAttemptLimiter,
    private readonly audit: AuditService,
    private readonly metrics: Metrics,
    private readonly tokens: TokenService,
    private readonly resourceServers: ResourceServersService,
    private readonly identities: WorkloadIdentitiesService,
    private readonly authenticator: TokenAuthenticator,
    private readonly usage: CredentialUsageCounter,
  ) {}

  /** The key value as presented (its protocol's own checks passed), parsed; or the refusal to count. */
  present(value: string): PresentedKey | ExchangeRefused {
    const parsed = this.apiKeys.codec.parse(value);
    return parsed === null ? new ExchangeRefused('malformed_key') : [parsed, value];
  }

  /**
   * Steps 1-6 of docs/api.md#post-v1token after the protocol's own parsing: a refusal found without I/O is counted by
   * the failure limit; a key reaches the database only with a slot taken. Refusals are counted, audited and thrown.
   */
  async authenticateKey(presented: PresentedKey | ExchangeRefused, client: ExchangeClient): Promise<ApiKeyExchange> {
    let exchange: ApiKeyExchange | undefined;
    try {
      if (presented instanceof ExchangeRefused) {
        await this.limiter.countFailure(client.address);
        throw presented;
      }
      const [parsed, value] = presented;
      exchange = await this.limiter.attempt(client.address, value, () => this.check(parsed, client.address));
      if (exchange.allowedCidrs != null || exchange.rateLimit != null) await this.admit(exchange, client);
      return exchange;
    } catch (error) {
      const outcome = refusalOutcome(error);
      this.metrics.tokenExchange(outcome);
      // A refusal of a key the secret proved (revoked, expired, owner removed, its allowlist or rate limit) counts in
      // its usage over time; an unknown key or a wrong secret nowhere (docs/api.md#usage-over-time).
      const key =
        exchange === undefined
          ? refusedKey(error)
          : { id: exchange.credentialId, organizationId: exchange.organizationId };
      if (key !== undefined && outcome !== 'unavailable' && outcome !== 'error') {
        this.usage.count('api_key', key.id, key.organizationId, client.channel, false);
      }
      // 429s are neither recorded nor logged here (the access log has them), so that a client hammering
      // a closed door costs no write at all.
      if (error instanceof ExchangeRefused || error instanceof AddressNotAllowed)
        await this.recordRefusal(error, client);
      throw error;
    }
  }

  /**
   * The key's own policies, per request (not in the check an identical attempt shares), decided as for its tokens
   * (TokenAuthenticator.admit): its allowlist (403, counted as a failure of the address) and its rate limit (429).
   */
  private async admit(exchange: ApiKeyExchange, client: ExchangeClient): Promise<void> {
    const policies = { id: exchange.credentialId, allowedCidrs: exchange.allowedCidrs, rateLimit: exchange.rateLimit };
    const admitted = await this.authenticator.admit(policies, () => client.address, true);
    if (admitted instanceof TokenRefusal) {
      await this.limiter.countFailure(client.address);
      const { credentialId: id, organizationId, userId } = exchange;
      throw new AddressNotAllowed({ id, organizationId, userId });
    }
  }

  /** Steps 7-8: the token, narrowed by scope, lifetime and resource; the key's use recorded. */
  async grant(
    exchange: ApiKeyExchange,
    narrowing: TokenNarrowing,
    client: ExchangeClient,
  ): Promise<AccessTokenResponse> {
    const kind = exchange.workloadIdentity === true ? 'workload_identity' : 'api_key';
    let granted: AccessGrant;
    try {
      let declared: readonly string[] = [];
      if (narrowing.resource !== undefined) {
        const scopes = await this.resourceServers.declaredScopes(narrowing.resource);
        if (scopes === null) throw new UnknownResource();
        declared = scopes.map((scope) => scope.name);
      }
      granted = this.tokens.accessGrant(exchange, narrowing, declared);
    } catch (error) {
      // A scope or resource it may not have: a refused use of the credential.
      if (error instanceof AppError && error.code === ErrorCode.INVALID_ARGUMENT) {
        this.usage.count(kind, exchange.credentialId, exchange.organizationId, client.channel, false);
      }
      throw error;
    }
    const { scope, lifetimeSeconds } = granted;
    let accessToken: string;
    try {
      accessToken = await this.tokens.mint({
        userId: exchange.userId,
        organizationId: exchange.organizationId,
        credentialId: exchange.credentialId,
        lifetimeSeconds,
        scope,
        issuedAtMs: exchange.checkedAtMs,
        tokenUse: 'access',
        audience: narrowing.resource,
        workloadIdentity: exchange.workloadIdentity,
        allowedCidrs: exchange.allowedCidrs,
      });
    } catch (error) {
      this.logger.error({ err: error }, 'signing an access token failed');
      this.metrics.tokenExchange('mint_failed');
      throw new AppError('mint_failed');
    }
    this.usage.count(kind, exchange.credentialId, exchange.organizationId, client.channel, true);
    if (exchange.workloadIdentity === true) {
      this.identities.recordUse(exchange.credentialId, exchange.clientAddress);
      // Once the token exists: an exchange that `scope` or `resource` refused above exchanged nothing.
      this.audit.recordSoon({
        action: 'workload_identity.exchanged',
        organizationId: exchange.organizationId,
        actorUserId: exchange.userId,
        targetType: 'workload_identity',
        targetId: exchange.credentialId,
        reason: exchange.subject,
        request: { id: client.requestId, ip: client.address },
      });
    } else {
      this.apiKeys.recordUse(exchange.credentialId, exchange.clientAddress, client.userAgent);
    }
    this.metrics.tokenExchange('success');
    return { access_token: accessToken, token_type: 'Bearer', expires_in: lifetimeSeconds, scope };
  }

  /** Steps 4-6. */
  private async check(parsed: ParsedApiKey, address: string | undefined): Promise<ApiKeyExchange> {
    try {
      const checkedAtMs = Date.now();
      const { key, ownerAccess } = await this.rules.checkKey(parsed, checkedAtMs);
      if (ownerAccess === null) {
        const { id, organizationId, userId } = key;
        throw new ExchangeRefused('not_a_member', { id, organizationId, userId });
      }
      return {
        userId: key.userId,
        organizationId: key.organizationId,
        credentialId: key.id,
        lifetimeSeconds: ownerAccess.accessTokenLifetime,
        scopes: key.scopes,
        rolePermissions: roleMask(ownerAccess.role),
        expiresAtMs: key.expiresAtMs,
        checkedAtMs,
        clientAddress: address,
        allowedCidrs: key.allowedCidrs,
        rateLimit: key.rateLimit,
      };
    } catch (error) {
      if (error instanceof ExchangeRefused) error.attemptedKeyId = parsed.keyId;
      throw error;
    }
  }

  /** Audited when it names a key id; else one log line, so no one can fill the table (operations.md#audit-trail). */
  private async recordRefusal(error: ExchangeRefused | AddressNotAllowed, client: ExchangeClient): Promise<void> {
    if (error.attemptedKeyId === undefined) {
      this.logger.log({ reason: error.outcome, ip: client.address }, 'token exchange refused');
      return;
    }
    await this.audit.record({
      action: 'token.exchange_failed',
      reason: error.outcome,
      organizationId: error.key?.organizationId,
      actorUserId: error.key?.userId,
      targetType: 'api_key',
      targetId: error.attemptedKeyId,
      request: { id: client.requestId, ip: client.address },
    });
  }
}

/** The key a refusal names once its secret matched (ExchangeRefused's `key`); undefined for an unknown one. */
function refusedKey(error: unknown): { id: string; organizationId: string } | undefined {
  return error instanceof ExchangeRefused || error instanceof AddressNotAllowed ? error.key : undefined;
}
