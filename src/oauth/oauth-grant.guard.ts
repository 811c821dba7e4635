import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import type { Request } from 'express';
import { ApiKeyCaller, exchangeClient } from '../auth/api-key.guard';
import { ExchangeRefused } from '../auth/key-exchange';
import { SubjectTokenExchangeService, TokenTypes } from '../auth/subject-token-exchange.service';
import { ExchangeClient, PresentedKey, TokenExchangeService } from '../auth/token-exchange.service';
import type { FederatedMember } from '../federation/people';
import { AppError, ErrorCode, Messages } from '../common/errors';
import { API_KEY_CLIENT_SCHEME } from '../common/openapi';
import { setCaller } from '../identity/access.decorators';
import { CodeGrantType, isCodeGrant } from './code-grant.service';
import { ClientCredentials, clientCredentials, FormParameters, formParameters } from '../common/client-credentials';

const UUID_OR_HEX = /^(?:[0-9a-f]{32}|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$/i;

function sameId(clientId: string, keyId: string): boolean {
  return clientId.replace(/-/g, '').toLowerCase() === keyId.replace(/-/g, '');
}

/** RFC 8693 section 2.1. */
export const TOKEN_EXCHANGE_GRANT = 'urn:ietf:params:oauth:grant-type:token-exchange';

/** The caller of POST /oauth/token: who the grant authenticated. */
export type OAuthGrantCaller =
  | ({ grant: 'client_credentials' } & ApiKeyCaller)
  /** A workload's token exchanged through a workload identity: an access token, as a key's. */
  | ({ grant: 'token_exchange'; subject: 'workload' } & ApiKeyCaller)
  /** A person's ID token: a session token for the member. */
  | { grant: 'token_exchange'; subject: 'person'; member: FederatedMember; client: ExchangeClient }
  /** A public client's code or refresh token: checked by the grant's own handler (CodeGrantService). */
  | { grant: CodeGrantType; client: ExchangeClient };

const invalidRequest = (message: string): AppError => new AppError(ErrorCode.INVALID_ARGUMENT, message);

/**
 * POST /oauth/token's scheme: the grant type names how the caller authenticates. `client_credentials` (RFC 6749 section
 * 4.4): the client is an API key (client_id its id, client_secret the whole key, by HTTP Basic or the form), through
 * the same exchange as POST /v1/token (TokenExchangeService). The token exchange (RFC 8693): no client authentication,
 * the subject token is the credential (SubjectTokenExchangeService; docs/federation.md#token-exchange). Refusals are
 * AppErrors that name their OAuth error; the exception filter renders them in RFC 6749's shape.
 */
@Injectable()
export class OAuthGrantGuard implements CanActivate {
  static readonly securityScheme = API_KEY_CLIENT_SCHEME;

  constructor(
    private readonly exchange: TokenExchangeService,
    private readonly subjectTokens: SubjectTokenExchangeService,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const request = context.switchToHttp().getRequest<Request>();
    const form = formParameters(request);
    if (form.grant_type === undefined) throw new AppError(ErrorCode.INVALID_ARGUMENT, 'grant_type is required');
    if (form.grant_type === TOKEN_EXCHANGE_GRANT) {
      setCaller(request, await this.tokenExchange(request, form));
      return true;
    }
    if (isCodeGrant(form.grant_type)) {
      if (request.headers.authorization !== undefined) {
        throw invalidRequest('a public client sends no Authorization header');
      }
      setCaller(request, { grant: form.grant_type, client: exchangeClient(request) } satisfies OAuthGrantCaller);
      return true;
    }
    if (form.grant_type !== 'client_credentials') {
      throw new AppError(
        ErrorCode.INVALID_ARGUMENT,
        'grant_type must be client_credentials, token-exchange, authorization_code or refresh_token',
        {
          oauth: { error: 'unsupported_grant_type' },
        },
      );
    }
    const client = exchangeClient(request);
    const exchange = await this.exchange.authenticateKey(this.presentedKey(clientCredentials(request, form)), client);
    setCaller(request, { grant: 'client_credentials', exchange, client } satisfies OAuthGrantCaller);
    return true;
  }

  /**
   * RFC 8693 section 2.1's parameters: the subject token and its type decide who is asking (an ID token: a person; a
   * JWT: a workload); the requested type, when given, must be what that subject gets. No client authentication: a
   * secret or an Authorization header is refused. A workload's `client_id` names its workload identity (only that one
   * is considered, as AWS names the role and Azure the application: docs/adr/0043); a person's is ignored (clients
   * such as openid-client send one).
   */
  private async tokenExchange(request: Request, form: FormParameters): Promise<OAuthGrantCaller> {
    if (request.headers.authorization !== undefined || form.client_secret !== undefined) {
      throw invalidRequest('the token exchange takes no client authentication: the subject token is the credential');
    }
    const { subject_token: token, subject_token_type: type, requested_token_type: requested } = form;
    if (token === undefined || token === '') throw invalidRequest('subject_token is required');
    if (form.actor_token !== undefined) throw invalidRequest('actor_token is not supported');
    // RFC 8693 section 2.1's `audience` is a target by a logical name, which Gatehouse does not resolve: ignored, it
    // would get a token for Gatehouse's own API, sent wherever the client meant it for (section 2.2.2: invalid_target).
    if (form.audience !== undefined) {
      throw new AppError(
        ErrorCode.INVALID_ARGUMENT,
        'audience is not supported: name a resource server with resource',
        {
          oauth: { error: 'invalid_target' },
        },
      );
    }
    const client = exchangeClient(request);
    if (type === TokenTypes.idToken) {
      if (requested !== undefined && requested !== TokenTypes.jwt) {
        throw invalidRequest('for an id_token, requested_token_type must be urn:ietf:params:oauth:token-type:jwt');
      }
      if (form.resource !== undefined || form.scope !== undefined) {
        throw invalidRequest('a session token takes no resource or scope: its role decides');
      }
      return {
        grant: 'token_exchange',
        subject: 'person',
        member: await this.subjectTokens.person(token, client),
        client,
      };
    }
    if (type === TokenTypes.jwt) {
      if (requested !== undefined && requested !== TokenTypes.accessToken && requested !== TokenTypes.jwt) {
        throw invalidRequest('for a jwt, requested_token_type must be an access_token (or jwt)');
      }
      const exchange = await this.subjectTokens.workload(token, client, form.client_id);
      return { grant: 'token_exchange', subject: 'workload', exchange, client };
    }
    throw invalidRequest(
      'subject_token_type must be urn:ietf:params:oauth:token-type:id_token or urn:ietf:params:oauth:token-type:jwt',
    );
  }

  /** The key in client_secret, named by client_id (its id, dashed or as in the key); else a counted refusal. */
  private presentedKey(credentials: ClientCredentials): PresentedKey | ExchangeRefused {
    const presented = this.exchange.present(credentials.clientSecret);
    if (presented instanceof ExchangeRefused) return presented;
    const { clientId } = credentials;
    const { keyId } = presented[0];
    // The id as the API shows it matches at once; else compared the long way (undashed, any case).
    if (clientId !== keyId && !(UUID_OR_HEX.test(clientId) && sameId(clientId, keyId))) {
      return new ExchangeRefused('invalid_credentials', Messages.invalidApiKeyCredentials);
    }
    return presented;
  }
}
