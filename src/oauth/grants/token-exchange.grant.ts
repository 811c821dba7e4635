import { Injectable } from '@nestjs/common';
import type { Request } from 'express';
import { exchangeClient } from '../../auth/api-key.guard';
import { SubjectTokenExchangeService, TokenTypes } from '../../auth/subject-token-exchange.service';
import { ExchangeClient, TokenExchangeService } from '../../auth/token-exchange.service';
import type { ApiKeyExchange } from '../../auth/token.service';
import type { FormParameters } from '../../common/client-credentials';
import { AppError } from '../../common/errors';
import type { FederatedMember } from '../../federation/people';
import type { OAuthTokenResponse } from '../openapi';
import { accessTokenNarrowing, OAuthGrant } from './oauth-grant';

/** RFC 8693 section 2.1. */
export const TOKEN_EXCHANGE_GRANT = 'urn:ietf:params:oauth:grant-type:token-exchange';

/** Who a subject token stands for. */
export type SubjectCaller =
  /** A workload's token exchanged through a workload identity: an access token, as a key's. */
  | { subject: 'workload'; exchange: ApiKeyExchange; client: ExchangeClient }
  /** A person's ID token: a session token for the member. */
  | { subject: 'person'; member: FederatedMember; client: ExchangeClient };

const invalidRequest = (message: string): AppError => new AppError('token_exchange_request_invalid', { message });

/**
 * RFC 8693 token exchange (docs/federation.md#token-exchange): no client authentication, the subject token is the
 * credential (SubjectTokenExchangeService). Its type decides who is asking (an ID token: a person; a JWT: a workload);
 * the requested type, when given, must be what that subject gets. A workload's `client_id` names its workload identity
 * (only that one is considered, as AWS names the role and Azure the application: docs/adr/0043); a person's is ignored
 * (clients such as openid-client send one).
 */
@Injectable()
export class TokenExchangeGrant implements OAuthGrant<SubjectCaller> {
  readonly type = TOKEN_EXCHANGE_GRANT;

  constructor(
    private readonly subjectTokens: SubjectTokenExchangeService,
    private readonly exchange: TokenExchangeService,
  ) {}

  /** The subject token's parameters are checked before it is verified (a verification is counted and may be remote). */
  async authenticate(request: Request, form: FormParameters): Promise<SubjectCaller> {
    if (request.headers.authorization !== undefined || form.client_secret !== undefined) {
      throw invalidRequest('the token exchange takes no client authentication: the subject token is the credential');
    }
    const { subject_token: token, subject_token_type: type, requested_token_type: requested } = form;
    if (token === undefined || token === '') throw invalidRequest('subject_token is required');
    if (form.actor_token !== undefined) throw invalidRequest('actor_token is not supported');
    // RFC 8693 section 2.1's `audience` is a target by a logical name, which Gatehouse does not resolve: ignored, it
    // would get a token for Gatehouse's own API, sent wherever the client meant it for (section 2.2.2: invalid_target).
    if (form.audience !== undefined) {
      throw new AppError('audience_not_supported');
    }
    const client = exchangeClient(request, 'oauth_token');
    if (type === TokenTypes.idToken) {
      if (requested !== undefined && requested !== TokenTypes.jwt) {
        throw invalidRequest('for an id_token, requested_token_type must be urn:ietf:params:oauth:token-type:jwt');
      }
      if (form.resource !== undefined || form.scope !== undefined) {
        throw invalidRequest('a session token takes no resource or scope: its role decides');
      }
      return { subject: 'person', member: await this.subjectTokens.person(token, client), client };
    }
    if (type === TokenTypes.jwt) {
      if (requested !== undefined && requested !== TokenTypes.accessToken && requested !== TokenTypes.jwt) {
        throw invalidRequest('for a jwt, requested_token_type must be an access_token (or jwt)');
      }
      const exchange = await this.subjectTokens.workload(token, client, form.client_id);
      return { subject: 'workload', exchange, client };
    }
    throw invalidRequest(
      'subject_token_type must be urn:ietf:params:oauth:token-type:id_token or urn:ietf:params:oauth:token-type:jwt',
    );
  }

  async issue(caller: SubjectCaller, form: FormParameters): Promise<OAuthTokenResponse> {
    if (caller.subject === 'person') {
      const session = await this.subjectTokens.session(caller.member);
      return {
        access_token: session.token,
        issued_token_type: TokenTypes.jwt,
        token_type: 'Bearer',
        expires_in: session.lifetimeSeconds,
      };
    }
    const granted = await this.exchange.grant(caller.exchange, accessTokenNarrowing(form), caller.client);
    return Object.assign(granted, { issued_token_type: TokenTypes.accessToken });
  }
}
