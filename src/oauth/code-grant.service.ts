import { Injectable, Logger } from '@nestjs/common';
import type { RequestContext } from '../audit/request-context';
import { TokenService } from '../auth/token.service';
import { AppError } from '../common/errors';
import type { FormParameters } from '../common/client-credentials';
import { ClientCheck, GrantTokens, GrantsService } from '../grants/grants.service';
import type { OAuthTokenResponse } from './openapi';

/** The grant types of public clients (docs/mcp.md#authorization-code): no client secret, the code or token is the proof. */
export const CODE_GRANTS = ['authorization_code', 'refresh_token'] as const;
export type CodeGrantType = (typeof CODE_GRANTS)[number];

export function isCodeGrant(grantType: string): grantType is CodeGrantType {
  return (CODE_GRANTS as readonly string[]).includes(grantType);
}

const required = (name: string): AppError => new AppError('parameter_missing', { message: `${name} is required` });

/**
 * POST /oauth/token's authorization_code and refresh_token grants: the grant's checks (GrantsService), then an RFC 9068
 * access token for the resource (`aud`), the person (`sub`), the client (`client_id`) and the granted `scope`, with the
 * organization's lifetime, and the next refresh token.
 */
@Injectable()
export class CodeGrantService {
  private readonly logger = new Logger(CodeGrantService.name);

  constructor(
    private readonly grants: GrantsService,
    private readonly tokens: TokenService,
  ) {}

  /**
   * `clientId`: the client the request named, authenticated when it has a secret (ClientGrant); `client`: a registered
   * public client's check, left to the redemption's statement.
   */
  async token(
    grantType: CodeGrantType,
    clientId: string,
    client: ClientCheck | null,
    form: FormParameters,
    request: RequestContext,
  ): Promise<OAuthTokenResponse> {
    let issued: GrantTokens;
    if (grantType === 'authorization_code') {
      if (form.code === undefined) {
        await client?.refusal();
        throw required('code');
      }
      issued = await this.grants.redeem(
        {
          code: form.code,
          clientId,
          redirectUri: form.redirect_uri,
          codeVerifier: form.code_verifier,
          resource: form.resource,
        },
        client,
      );
    } else {
      if (form.refresh_token === undefined) {
        await client?.refusal();
        throw required('refresh_token');
      }
      issued = await this.grants.refresh(form.refresh_token, clientId, client, request);
      if (form.resource !== undefined && form.resource !== issued.resource) {
        throw new AppError('resource_not_of_grant');
      }
    }
    let accessToken: string;
    try {
      accessToken = await this.tokens.mint({
        userId: issued.userId,
        organizationId: issued.organizationId,
        lifetimeSeconds: issued.lifetimeSeconds,
        tokenUse: 'access',
        scope: issued.scope,
        audience: issued.resource,
        grant: { id: issued.grantId, clientId: issued.clientId },
      });
    } catch (error) {
      this.logger.error({ err: error }, 'signing an access token failed');
      throw new AppError('mint_failed');
    }
    return {
      access_token: accessToken,
      token_type: 'Bearer',
      expires_in: issued.lifetimeSeconds,
      scope: issued.scope,
      refresh_token: issued.refreshToken,
    };
  }
}
