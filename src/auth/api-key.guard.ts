import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import type { Request } from 'express';
import { ApiKeysService, ExchangeRefused } from '../api-keys/api-keys.service';
import { AuditService } from '../audit/audit.service';
import type { ParsedApiKey } from '../api-keys/api-key-codec';
import { Messages } from '../common/errors';
import { TokenAttemptLimiter } from './token-attempt-limiter';

declare module 'express-serve-static-core' {
  interface Request {
    /** Set by ApiKeyGuard: the exchanging key's owner, key and the organization's token lifetime. */
    apiKeyExchange?: { userId: string; organizationId: string; apiKeyId: string; lifetimeSeconds: number };
  }
}

/**
 * POST /v1/token authentication, in the order docs/api.md fixes:
 * header missing -> scheme -> format (no database) -> id and secret -> revoked -> membership,
 * with the failed-attempt limit (TokenAttemptLimiter) checked after the scheme.
 */
@Injectable()
export class ApiKeyGuard implements CanActivate {
  constructor(
    private readonly apiKeys: ApiKeysService,
    private readonly limiter: TokenAttemptLimiter,
    private readonly audit: AuditService,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const request = context.switchToHttp().getRequest<Request>();
    try {
      request.apiKeyExchange = await this.exchange(request);
      return true;
    } catch (error) {
      // Every refusal is in the audit trail with its reason; 429s are not (they are logged), so
      // that a client hammering a closed door does not turn into one database write per request.
      if (error instanceof ExchangeRefused) {
        await this.audit.record({
          action: 'token.exchange_failed',
          reason: error.reason,
          organizationId: error.key?.organizationId,
          actorUserId: error.key?.userId,
          targetType: error.attemptedKeyId === undefined ? null : 'api_key',
          targetId: error.attemptedKeyId,
          request,
        });
      }
      throw error;
    }
  }

  private async exchange(request: Request): Promise<NonNullable<Request['apiKeyExchange']>> {
    const header = request.headers.authorization;
    if (header === undefined || header === '') {
      throw new ExchangeRefused('missing_header', Messages.authorizationHeaderRequired);
    }
    const space = header.indexOf(' ');
    const scheme = space === -1 ? header : header.slice(0, space);
    if (scheme.toLowerCase() !== 'apikey') throw new ExchangeRefused('wrong_scheme', Messages.apiKeySchemeRequired);

    const parsed = space === -1 ? null : this.apiKeys.codec.parse(header.slice(space + 1).replace(/^ +/, ''));
    // A client or key that has used up its failures is refused before its credentials are checked
    // (429), so that guessing stops; every 401 from here on counts as one failure.
    await this.limiter.check(request.ip, parsed?.keyId);
    try {
      return await this.authenticate(parsed);
    } catch (error) {
      if (error instanceof ExchangeRefused) {
        error.attemptedKeyId = parsed?.keyId;
        await this.limiter.recordFailure(request.ip, parsed?.keyId);
      }
      throw error;
    }
  }

  /** Steps 3-6. */
  private async authenticate(parsed: ParsedApiKey | null): Promise<NonNullable<Request['apiKeyExchange']>> {
    if (parsed === null) throw new ExchangeRefused('malformed_key', Messages.apiKeyInvalid);
    const { key, access } = await this.apiKeys.authenticate(parsed);
    if (access === null) throw new ExchangeRefused('not_a_member', Messages.invalidApiKeyCredentials, key);
    return {
      userId: key.userId,
      organizationId: key.organizationId,
      apiKeyId: key.id,
      lifetimeSeconds: access.accessTokenLifetime,
    };
  }
}
