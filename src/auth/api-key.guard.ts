import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import type { Request } from 'express';
import { ApiKeysService } from '../api-keys/api-keys.service';
import { Messages, unauthenticatedApiKey } from '../common/errors';
import { IdentityService } from '../identity/identity.service';

declare module 'express-serve-static-core' {
  interface Request {
    /** Set by ApiKeyGuard: the exchanging key's owner, key and the organization's token lifetime. */
    apiKeyExchange?: { userId: string; organizationId: string; apiKeyId: string; lifetimeSeconds: number };
  }
}

/**
 * POST /v1/token authentication, in the order DESIGN.md section 2 fixes:
 * header missing -> scheme -> format (no database) -> id and secret -> revoked -> membership.
 */
@Injectable()
export class ApiKeyGuard implements CanActivate {
  constructor(
    private readonly apiKeys: ApiKeysService,
    private readonly identity: IdentityService,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const request = context.switchToHttp().getRequest<Request>();
    const header = request.headers.authorization;
    if (header === undefined || header === '') throw unauthenticatedApiKey(Messages.authorizationHeaderRequired);
    const space = header.indexOf(' ');
    const scheme = space === -1 ? header : header.slice(0, space);
    if (scheme.toLowerCase() !== 'apikey') throw unauthenticatedApiKey(Messages.apiKeySchemeRequired);

    const parsed = space === -1 ? null : this.apiKeys.codec.parse(header.slice(space + 1).replace(/^ +/, ''));
    if (parsed === null) throw unauthenticatedApiKey(Messages.apiKeyInvalid);
    const key = await this.apiKeys.authenticate(parsed);
    const access = await this.identity.access(key.organizationId, key.userId);
    if (access === null) throw unauthenticatedApiKey(Messages.invalidApiKeyCredentials);

    request.apiKeyExchange = {
      userId: key.userId,
      organizationId: key.organizationId,
      apiKeyId: key.id,
      lifetimeSeconds: access.accessTokenLifetime,
    };
    return true;
  }
}
