import { FactoryProvider, Type } from '@nestjs/common';
import { AppError } from '../../common/errors';
import { AuthorizationCodeGrant, RefreshTokenGrant } from './authorization-code.grant';
import { ClientCredentialsGrant } from './client-credentials.grant';
import type { OAuthGrant } from './oauth-grant';
import { TokenExchangeGrant } from './token-exchange.grant';

/** Every grant type POST /oauth/token takes, in the order RFC 8414 metadata lists them: the one place to add one. */
export const OAUTH_GRANTS: ReadonlyArray<Type<OAuthGrant>> = [
  ClientCredentialsGrant,
  TokenExchangeGrant,
  AuthorizationCodeGrant,
  RefreshTokenGrant,
];

/** The grant handlers by their `grant_type` (OAuthGrantGuard dispatches on it; the metadata lists them). */
export class OAuthGrants {
  private readonly byType: ReadonlyMap<string, OAuthGrant>;

  constructor(grants: readonly OAuthGrant[]) {
    this.byType = new Map(grants.map((grant) => [grant.type, grant]));
  }

  /** RFC 8414's `grant_types_supported`. */
  get types(): string[] {
    return [...this.byType.keys()];
  }

  /** The handler of the form's `grant_type`; 400 invalid_request without one, unsupported_grant_type for another. */
  of(grantType: string | undefined): OAuthGrant {
    if (grantType === undefined) throw new AppError('grant_type_missing');
    const grant = this.byType.get(grantType);
    // The catalogue's message names OAUTH_GRANTS' types in order (oauth-grants.spec.ts).
    if (grant === undefined) throw new AppError('unsupported_grant_type');
    return grant;
  }
}

/** The registry, made of OAUTH_GRANTS' instances (each a provider of the OAuth module). */
export const oauthGrantsProvider: FactoryProvider<OAuthGrants> = {
  provide: OAuthGrants,
  useFactory: (...grants: OAuthGrant[]) => new OAuthGrants(grants),
  inject: [...OAUTH_GRANTS],
};
