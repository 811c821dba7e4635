import { Inject, Injectable } from '@nestjs/common';
import {
  allowInsecureRequests,
  authorizationCodeGrant,
  AuthorizationResponseError,
  buildAuthorizationUrl,
  ClientError,
  ClientSecretBasic,
  ClientSecretPost,
  Configuration,
  customFetch,
  type CustomFetch,
  ResponseBodyError,
  type ServerMetadata,
  WWWAuthenticateChallengeError,
} from 'openid-client';
import type { PrivateNetworks } from '../../common/address-rules';
import { AppError } from '../../common/errors';
import { InjectConfig } from '../../config/config.module';
import type { AppConfiguration } from '../../config/configuration';
import { describeFetchError, pinnedFetch } from '../../federation/bounded-fetch';
import { DiscoveryError, IssuerMetadata } from '../../federation/issuer-discovery';
import { endpointProblem } from '../../federation/issuer-url';
import { ALLOWED_ALGORITHMS } from '../../federation/subject-token-rules';
import type { TrustedIssuer } from '../../federation/trusted-issuer.entity';
import { SsoErrors } from './sso-errors';
import { SsoIssuerMetadata } from './sso-issuer-metadata';
import { SSO_SETTINGS, SsoSettings } from './sso-settings';

/** What console single sign-on asks of the identity provider: who the person is, and their address. */
export const SSO_SCOPE = 'openid email profile';

/** The fetch openid-client sends its requests with (tests wrap it to play a provider that misbehaves). */
export const SSO_FETCH = Symbol('SSO_FETCH');

/** A token response is a few kilobytes; a provider that sends without end is cut off here. */
const MAX_TOKEN_RESPONSE_BYTES = 256 * 1024;

/**
 * The fetch of the token endpoint: federation's, held to the outbound address rules (loopback only where
 * `allowLoopback`, outside production) and connected to the address it checked, the answer read whole up to 256 KiB.
 */
export function ssoFetch(allowLoopback: boolean, privateNetworks?: PrivateNetworks): CustomFetch {
  return (url, options) =>
    pinnedFetch(
      url,
      { method: options.method, headers: options.headers, body: options.body, signal: options.signal },
      { allowLoopback, privateNetworks, maxBytes: MAX_TOKEN_RESPONSE_BYTES },
    );
}

/**
 * openid-client's view of the issuer, from federation's discovery: its endpoints (https, or http on a loopback host
 * outside production, as the issuer itself; on the issuer's origin or one of `allowedOrigins`), and of the ID token
 * algorithms it announces only those Gatehouse accepts, so that openid-client refuses an ID token signed with any
 * other (RFC 8725: never `none`, never HS*).
 */
export function serverMetadata(
  metadata: IssuerMetadata,
  production: boolean,
  requireIss = false,
  allowedOrigins: readonly string[] = [],
  privateNetworks?: PrivateNetworks,
): ServerMetadata {
  const { authorizationEndpoint, tokenEndpoint } = metadata;
  if (authorizationEndpoint === undefined || tokenEndpoint === undefined) {
    throw SsoErrors.unavailable(`${metadata.documentUrl} names no authorization_endpoint or token_endpoint`);
  }
  for (const endpoint of [authorizationEndpoint, tokenEndpoint]) {
    const problem = endpointProblem(endpoint, metadata.issuer, { production, allowedOrigins, privateNetworks });
    if (problem !== null) throw SsoErrors.unavailable(`the endpoint ${endpoint} ${problem.text}`);
  }
  const announced = metadata.idTokenSigningAlgs ?? [...ALLOWED_ALGORITHMS];
  return {
    issuer: metadata.issuer,
    authorization_endpoint: authorizationEndpoint,
    token_endpoint: tokenEndpoint,
    jwks_uri: metadata.jwksUri,
    token_endpoint_auth_methods_supported: metadata.tokenEndpointAuthMethods,
    // openid-client then refuses an authorization response without `iss` (RFC 9207 section 2.4: an issuer that
    // announces the parameter sends it in every response, so one without it is not that issuer's). `requireIss`: the
    // answer came to the shared redirect URI, which only `iss` makes safe (docs/adr/0042).
    authorization_response_iss_parameter_supported: metadata.issParameterSupported || requireIss,
    id_token_signing_alg_values_supported: announced.filter((alg) =>
      (ALLOWED_ALGORITHMS as readonly string[]).includes(alg),
    ),
  };
}

/** What the callback checks the provider's answer against: the values its sign-in started with. */
export interface AuthorizationChecks {
  state: string;
  nonce: string;
  codeVerifier: string;
  /** Refuse an answer without the issuer's `iss` (RFC 9207), whatever its discovery document says now. */
  requireIss: boolean;
}

/**
 * Gatehouse as an OpenID Connect client of an organization's identity provider (an adapter over openid-client v6):
 * the authorization request's URL, and the code exchanged at the token endpoint with the client secret (Basic or in
 * the form, as the issuer is configured), PKCE and the checks of the answer (state, `iss`, the ID token's `iss`, `aud`,
 * `exp`, `iat`, `nonce`, algorithm; `azp` only when `aud` names several audiences, where it must be the client id, as
 * OpenID Connect Core 1.0 errata set 2 section 3.1.3.7 has it: a single-audience token's `azp` is not compared). The ID
 * token's signature is checked by the caller with the issuer's key set (federation's SubjectTokenVerifier). Every
 * request has SsoSettings.httpTimeoutMs; an answer it cannot get is a 503.
 */
@Injectable()
export class SsoClient {
  constructor(
    private readonly metadata: SsoIssuerMetadata,
    @Inject(SSO_SETTINGS) private readonly settings: SsoSettings,
    @Inject(SSO_FETCH) private readonly fetch: CustomFetch,
    @InjectConfig() private readonly config: AppConfiguration,
  ) {}

  async authorizationUrl(
    entry: TrustedIssuer,
    request: { redirectUri: string; state: string; nonce: string; codeChallenge: string },
  ): Promise<string> {
    const { configuration } = await this.configuration(entry, undefined);
    return buildAuthorizationUrl(configuration, {
      response_type: 'code',
      scope: SSO_SCOPE,
      redirect_uri: request.redirectUri,
      state: request.state,
      nonce: request.nonce,
      code_challenge: request.codeChallenge,
      code_challenge_method: 'S256',
    }).href;
  }

  /**
   * Whether the issuer's (cached) discovery document announces `authorization_response_iss_parameter_supported`
   * (RFC 9207 section 3); 503 without a document.
   */
  async announcesIss(entry: TrustedIssuer): Promise<boolean> {
    return (await this.issuerMetadata(entry)).issParameterSupported;
  }

  /** The ID token of the authorization response at `callback`; AppErrors: 400 for a refusal, 503 for no answer. */
  async idToken(
    entry: TrustedIssuer,
    clientSecret: string,
    callback: URL,
    checks: AuthorizationChecks,
  ): Promise<string> {
    const { configuration, transport } = await this.configuration(entry, clientSecret, checks.requireIss);
    let idToken: string | undefined;
    try {
      const tokens = await authorizationCodeGrant(configuration, callback, {
        pkceCodeVerifier: checks.codeVerifier,
        expectedState: checks.state,
        expectedNonce: checks.nonce,
        idTokenExpected: true,
      });
      idToken = tokens.id_token;
    } catch (error) {
      throw refusal(error, transport.failure);
    }
    if (idToken === undefined) throw SsoErrors.answerRefused('no ID token');
    return idToken;
  }

  private async issuerMetadata(entry: TrustedIssuer): Promise<IssuerMetadata> {
    try {
      return await this.metadata.of(entry);
    } catch (error) {
      if (error instanceof DiscoveryError) throw SsoErrors.unavailable(error.message);
      throw error;
    }
  }

  private async configuration(
    entry: TrustedIssuer,
    clientSecret: string | undefined,
    requireIss = false,
  ): Promise<{ configuration: Configuration; transport: { failure?: string } }> {
    const metadata = await this.issuerMetadata(entry);
    const server = serverMetadata(
      metadata,
      this.config.production,
      requireIss,
      entry.allowedOrigins,
      this.config.identityProviderNetworks,
    );
    const authentication =
      entry.tokenEndpointAuth === 'client_secret_post'
        ? ClientSecretPost(clientSecret)
        : ClientSecretBasic(clientSecret);
    const configuration = new Configuration(server, entry.clientId ?? '', undefined, authentication);
    configuration.timeout = this.settings.httpTimeoutMs / 1000;
    // Why a request got no answer, in words (openid-client turns a network failure into a bare error).
    const transport: { failure?: string } = {};
    configuration[customFetch] = async (url, options) => {
      try {
        return await this.fetch(url, options);
      } catch (error) {
        transport.failure = `${new URL(url).origin}: ${describeFetchError(error, this.settings.httpTimeoutMs)}`;
        throw error;
      }
    };
    // serverMetadata has refused http:// but on a loopback host outside production.
    if ([server.authorization_endpoint, server.token_endpoint].some((url) => url?.startsWith('http:'))) {
      allowInsecureRequests(configuration);
    }
    return { configuration, transport };
  }
}

/** openid-client's error as the callback's answer: no answer is a 503, anything the provider said is a 400. */
function refusal(error: unknown, transportFailure: string | undefined): AppError {
  if (transportFailure !== undefined) return SsoErrors.unavailable(transportFailure);
  if (error instanceof AuthorizationResponseError) return SsoErrors.providerError(error.error);
  if (error instanceof ResponseBodyError) {
    return error.status >= 500
      ? SsoErrors.unavailable(`the token endpoint answered ${error.status}`)
      : SsoErrors.codeRefused(error.error);
  }
  if (error instanceof WWWAuthenticateChallengeError) {
    // A 401 with a challenge: the client authentication was refused (RFC 6749 section 5.2, invalid_client).
    if (error.status >= 500) return SsoErrors.unavailable(`the token endpoint answered ${error.status}`);
    const challenged = error.cause[0]?.parameters.error;
    return SsoErrors.codeRefused(typeof challenged === 'string' ? challenged : 'invalid_client');
  }
  if (error instanceof ClientError) {
    const status = (error.cause as { status?: unknown } | undefined)?.status;
    if (typeof status === 'number' && status >= 500) {
      return SsoErrors.unavailable(`the token endpoint answered ${status}`);
    }
    const cause = error.cause instanceof Error ? error.cause.message : undefined;
    return SsoErrors.answerRefused(cause ?? error.message);
  }
  if (error instanceof AppError) return error;
  throw error;
}
