import { CanActivate, ExecutionContext, Injectable, Logger } from '@nestjs/common';
import type { Request } from 'express';
import { ApiKeysService } from '../api-keys/api-keys.service';
import { ExchangeRefused, KeyExchangeRules } from './key-exchange';
import { AuditService } from '../audit/audit.service';
import type { ParsedApiKey } from '../api-keys/api-key-codec';
import { clientAddress } from '../common/client-address';
import { Messages } from '../common/errors';
import { Metrics } from '../metrics/metrics';
import { refusalOutcome } from './exchange-outcome';
import type { ApiKeyExchange } from './token.service';
import { TokenAttemptLimiter } from './token-attempt-limiter';

declare module 'express-serve-static-core' {
  interface Request {
    /** Set by ApiKeyGuard: the authenticated exchange (the key, its owner, scopes and expiry). */
    apiKeyExchange?: ApiKeyExchange;
  }
}

type Exchange = NonNullable<Request['apiKeyExchange']>;

/**
 * POST /v1/token authentication in the order of docs/api.md#post-v1token, before the body; the failure limit sees
 * every 401, and a key reaches the database only with a slot taken.
 */
@Injectable()
export class ApiKeyGuard implements CanActivate {
  private readonly logger = new Logger(ApiKeyGuard.name);

  constructor(
    private readonly apiKeys: ApiKeysService,
    private readonly rules: KeyExchangeRules,
    private readonly limiter: TokenAttemptLimiter,
    private readonly audit: AuditService,
    private readonly metrics: Metrics,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const request = context.switchToHttp().getRequest<Request>();
    const address = clientAddress(request);
    try {
      request.apiKeyExchange = await this.exchange(request.headers.authorization, address);
      return true;
    } catch (error) {
      this.metrics.tokenExchange(refusalOutcome(error));
      // 429s are neither recorded nor logged here (the access log has them), so that a client hammering
      // a closed door costs no write at all.
      if (error instanceof ExchangeRefused) await this.recordRefusal(error, request.id, address);
      throw error;
    }
  }

  private async exchange(header: string | undefined, address: string | undefined): Promise<Exchange> {
    const presented = this.presentedKey(header);
    if (presented instanceof ExchangeRefused) {
      await this.limiter.countFailure(address);
      throw presented;
    }
    const [parsed, value] = presented;
    return this.limiter.attempt(address, value, () => this.authenticate(parsed, address));
  }

  /** Steps 1-3, no I/O: the key named by the header, or the refusal to answer with. */
  private presentedKey(header: string | undefined): [ParsedApiKey, string] | ExchangeRefused {
    if (header === undefined || header === '') {
      return new ExchangeRefused('missing_header', Messages.authorizationHeaderRequired);
    }
    const space = header.indexOf(' ');
    const scheme = space === -1 ? header : header.slice(0, space);
    if (scheme.toLowerCase() !== 'apikey') return new ExchangeRefused('wrong_scheme', Messages.apiKeySchemeRequired);
    const value = space === -1 ? '' : header.slice(space + 1).replace(/^ +/, '');
    const parsed = this.apiKeys.codec.parse(value);
    return parsed === null ? new ExchangeRefused('malformed_key', Messages.apiKeyInvalid) : [parsed, value];
  }

  /** Steps 4-6. */
  private async authenticate(parsed: ParsedApiKey, address: string | undefined): Promise<Exchange> {
    try {
      const checkedAtMs = Date.now();
      const { key, ownerAccess } = await this.rules.authenticate(parsed, checkedAtMs);
      if (ownerAccess === null) {
        const { id, organizationId, userId } = key;
        throw new ExchangeRefused('not_a_member', Messages.invalidApiKeyCredentials, { id, organizationId, userId });
      }
      return {
        userId: key.userId,
        organizationId: key.organizationId,
        apiKeyId: key.id,
        lifetimeSeconds: ownerAccess.accessTokenLifetime,
        scopes: key.scopes,
        expiresAtMs: key.expiresAtMs,
        checkedAtMs,
        clientAddress: address,
      };
    } catch (error) {
      if (error instanceof ExchangeRefused) error.attemptedKeyId = parsed.keyId;
      throw error;
    }
  }

  /** Audited when it names a key id; else one log line, so no one can fill the table (operations.md#audit-trail). */
  private async recordRefusal(error: ExchangeRefused, requestId: string, address: string | undefined): Promise<void> {
    if (error.attemptedKeyId === undefined) {
      this.logger.log({ reason: error.reason, ip: address }, 'token exchange refused');
      return;
    }
    await this.audit.record({
      action: 'token.exchange_failed',
      reason: error.reason,
      organizationId: error.key?.organizationId,
      actorUserId: error.key?.userId,
      targetType: 'api_key',
      targetId: error.attemptedKeyId,
      request: { id: requestId, ip: address },
    });
  }
}
