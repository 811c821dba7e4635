import { Injectable } from '@nestjs/common';
import type { Request } from 'express';
import { exchangeClient } from '../../auth/api-key.guard';
import type { ExchangeClient } from '../../auth/token-exchange.service';
import { basicCredentials } from '../../common/basic-auth';
import { FormParameters, unauthenticatedClient } from '../../common/client-credentials';
import { AppError } from '../../common/errors';
import type { ClientCheck } from '../../grants/grants.service';
import { isDocumentUrl } from '../clients/client-document';
import { PresentedClient, RegisteredClients } from '../clients/registered-clients.service';
import { CodeGrantService, CodeGrantType } from '../code-grant.service';
import type { OAuthTokenResponse } from '../openapi';
import type { OAuthGrant } from './oauth-grant';

/**
 * The client as the token request named it, authenticated if it has a secret; a registered public client's check is
 * the redemption's (`clientCheck`), one statement fewer per request.
 */
export type CodeGrantCaller = ExchangeClient & { clientId: string; clientCheck: ClientCheck | null };

/** client_id, and a secret by HTTP Basic or the form (RFC 6749 section 2.3.1), by one method at most. */
function presentedClient(request: Request, form: FormParameters): PresentedClient {
  const header = request.headers.authorization;
  if (header === undefined || header === '') {
    if (form.client_id === undefined) throw new AppError('parameter_missing', { message: 'client_id is required' });
    return { clientId: form.client_id, secret: form.client_secret, viaHeader: false };
  }
  const basic = basicCredentials(header);
  if (basic === null) {
    throw unauthenticatedClient('client_authentication_malformed', 'client authentication must use HTTP Basic');
  }
  if (form.client_secret !== undefined) {
    throw new AppError('client_authentication_ambiguous', {
      message: 'the client authenticated by more than one method',
    });
  }
  if (form.client_id !== undefined && form.client_id !== basic.id) {
    throw new AppError('client_authentication_ambiguous', { message: 'client_id differs from the Basic credentials' });
  }
  return { clientId: basic.id, secret: basic.secret, viaHeader: true };
}

/**
 * The grants of an authorization code's clients (docs/mcp.md#authorization-code): a metadata document's or a
 * dynamically registered client is public (no secret: the code or the refresh token is the proof); an organization's
 * confidential client authenticates with its secret. The grant itself is checked when the token is issued
 * (CodeGrantService). (Injectable for the constructor's parameter types, which its subclasses inherit.)
 */
@Injectable()
abstract class ClientGrant implements OAuthGrant<CodeGrantCaller> {
  abstract readonly type: CodeGrantType;

  constructor(
    private readonly codeGrants: CodeGrantService,
    private readonly registered: RegisteredClients,
  ) {}

  async authenticate(request: Request, form: FormParameters): Promise<CodeGrantCaller> {
    const presented = presentedClient(request, form);
    let clientCheck: ClientCheck | null = null;
    if (isDocumentUrl(presented.clientId)) {
      if (presented.viaHeader) throw new AppError('client_authentication_not_accepted');
      if (presented.secret !== undefined) throw new AppError('client_secret_not_accepted');
    } else {
      clientCheck = await this.registered.tokenClient(presented);
    }
    return Object.assign(exchangeClient(request, 'oauth_token'), { clientId: presented.clientId, clientCheck });
  }

  async issue(caller: CodeGrantCaller, form: FormParameters): Promise<OAuthTokenResponse> {
    const { clientId, clientCheck } = caller;
    const issued = await this.codeGrants.token(this.type, clientId, clientCheck, form, {
      id: caller.requestId,
      ip: caller.address,
    });
    if (clientCheck !== null) await this.registered.recordUse(clientId);
    return issued;
  }
}

/** RFC 6749 section 4.1 with PKCE (RFC 7636): the code the consent page issued, for an access and a refresh token. */
@Injectable()
export class AuthorizationCodeGrant extends ClientGrant {
  readonly type = 'authorization_code';
}

/** RFC 6749 section 6: a grant's refresh token, rotated, for the next access token. */
@Injectable()
export class RefreshTokenGrant extends ClientGrant {
  readonly type = 'refresh_token';
}
