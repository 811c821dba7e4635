import { Injectable } from '@nestjs/common';
import type { RequestContext } from '../audit/request-context';
import { AppError } from '../common/errors';
import { InjectConfig, InjectSecrets } from '../config/config.module';
import type { AppConfiguration } from '../config/configuration';
import type { Secrets } from '../config/local-secrets';
import { GrantsService } from '../grants/grants.service';
import { S256_CHALLENGE, scopeSet } from '../grants/grant-secrets';
import { IdentityService } from '../identity/identity.service';
import type { Principal } from '../identity/principal';
import { ResourceServersService } from '../resource-servers/resource-servers.service';
import { AUTHORIZATION_REQUEST_MS, AuthorizationRequest, AuthorizationRequestCodec } from './authorization-request';
import { ClientRefused, OAuthClient } from './clients/client-document';
import { redirectUriAllowed } from './clients/redirect-uris';
import { OAuthClients } from './clients/oauth-clients';
import { describeResource } from './resource-scopes';

/** What GET /oauth/authorize does: show a page (the redirect URI is not known to be the client's), or redirect. */
export type AuthorizeOutcome = { page: string } | { redirect: string };

/** The parameters of GET /oauth/authorize, each given once (RFC 6749 section 3.1). */
export type AuthorizeParameters = Record<string, string | undefined>;

/** What the consent page shows (docs/mcp.md#consent). */
export interface ConsentDescription {
  client: OAuthClient;
  /** Where the browser goes back to: the redirect URI's host (and port), or a native app's scheme (and host). */
  redirectHost: string;
  resource: { audience: string; name: string };
  scopes: Array<{ name: string; description: string }>;
  organization: { id: string; name: string };
  /** An earlier consent covers it: the console allows it without asking. */
  remembered: boolean;
}

const MAX_STATE = 1024;

/** The request of the consent page is no longer valid (expired, or not one of ours). */
function requestRefused(): AppError {
  return new AppError('authorization_request_invalid');
}

/**
 * The authorization endpoint's rules (docs/mcp.md#authorization-code): the client and its redirect URI first (until both
 * are known, every refusal is a page), then the rest, refused by a redirect that names Gatehouse (RFC 9207's `iss`).
 */
@Injectable()
export class AuthorizationService {
  private readonly codec: AuthorizationRequestCodec;
  private readonly issuer: string;
  private readonly consoleUrl: string;

  constructor(
    private readonly clients: OAuthClients,
    private readonly resourceServers: ResourceServersService,
    private readonly grants: GrantsService,
    private readonly identity: IdentityService,
    @InjectConfig() config: AppConfiguration,
    @InjectSecrets() secrets: Secrets,
  ) {
    this.codec = new AuthorizationRequestCodec(secrets.apiKeyPepper);
    this.issuer = config.jwt.issuer;
    this.consoleUrl = `${config.console.publicBaseUrl}/console/consent`;
  }

  async authorize(query: AuthorizeParameters, nowMs = Date.now()): Promise<AuthorizeOutcome> {
    const { client_id: clientId, redirect_uri: redirectUri } = query;
    if (clientId === undefined || clientId === '') return { page: 'client_id is required.' };
    let client: OAuthClient;
    try {
      client = await this.clients.client(clientId);
    } catch (error) {
      if (error instanceof ClientRefused) return { page: `The client ${clientId} was refused: ${error.message}.` };
      throw error;
    }
    if (redirectUri === undefined || redirectUri === '') return { page: 'redirect_uri is required.' };
    if (!redirectUriAllowed(client.redirectUris, redirectUri)) {
      return { page: `redirect_uri ${redirectUri} is not one of the client's redirect URIs.` };
    }
    const state = query.state ?? null;
    const refuse = (error: string, description: string): AuthorizeOutcome => ({
      redirect: this.answer(redirectUri, { error, error_description: description, state }),
    });
    if (query.response_type !== 'code') return refuse('unsupported_response_type', 'response_type must be code');
    if (query.code_challenge_method !== 'S256') {
      return refuse('invalid_request', 'code_challenge_method must be S256 (plain is not accepted)');
    }
    if (query.code_challenge === undefined || !S256_CHALLENGE.test(query.code_challenge)) {
      return refuse('invalid_request', 'code_challenge is required: the base64url SHA-256 of the code verifier');
    }
    if (state !== null && state.length > MAX_STATE) return refuse('invalid_request', 'state is too long');
    if (query.resource === undefined || query.resource === '') {
      return refuse('invalid_target', "resource is required: the resource server's audience (RFC 8707)");
    }
    const resource = await describeResource(this.resourceServers, query.resource);
    if (resource === null) return refuse('invalid_target', 'resource names no registered resource server');
    const scopes = scopeSet(query.scope);
    const undeclared = scopes.filter((name) => !resource.scopes.has(name));
    if (undeclared.length > 0) {
      return refuse('invalid_scope', `the resource server does not declare ${undeclared.join(' ')}`);
    }
    const request = this.codec.encode({
      clientId,
      redirectUri,
      state,
      codeChallenge: query.code_challenge,
      resource: resource.audience,
      scopes,
      expiresAtMs: nowMs + AUTHORIZATION_REQUEST_MS,
    });
    return { redirect: `${this.consoleUrl}?${new URLSearchParams({ request }).toString()}` };
  }

  /** What the consent page shows the signed-in person. */
  async describe(principal: Principal, encoded: string): Promise<ConsentDescription> {
    const request = this.request(encoded);
    const [client, resource, organization] = await Promise.all([
      this.consentClient(request, principal),
      describeResource(this.resourceServers, request.resource),
      this.identity.organizationById(principal.organizationId),
    ]);
    if (resource === null) throw requestRefused();
    return {
      client,
      redirectHost: redirectTarget(request.redirectUri),
      resource: { audience: resource.audience, name: resource.name },
      scopes: request.scopes.map((name) => ({ name, description: resource.scopes.get(name) ?? '' })),
      organization: { id: organization.id, name: organization.name },
      remembered: await this.grants.remembered(principal, request.clientId, request.resource, request.scopes),
    };
  }

  /** The person's decision: the redirect to the client, with a code (Allow) or access_denied (Deny). */
  async decide(principal: Principal, encoded: string, allow: boolean, context?: RequestContext): Promise<string> {
    const request = this.request(encoded);
    if (!allow) {
      return this.answer(request.redirectUri, {
        error: 'access_denied',
        error_description: 'the person denied the request',
        state: request.state,
      });
    }
    const client = await this.consentClient(request, principal);
    const code = await this.grants.allow(
      principal,
      {
        clientId: request.clientId,
        clientName: client.name,
        redirectUri: request.redirectUri,
        codeChallenge: request.codeChallenge,
        resource: request.resource,
        scopes: request.scopes,
      },
      context,
    );
    return this.answer(request.redirectUri, { code, state: request.state });
  }

  private request(encoded: string): AuthorizationRequest {
    let request: AuthorizationRequest | null;
    try {
      request = this.codec.decode(encoded);
    } catch {
      request = null;
    }
    if (request === null) throw requestRefused();
    return request;
  }

  /** The request's client, still good, and usable in the person's organization (an organization's own: its members). */
  private async consentClient(request: AuthorizationRequest, principal: Principal): Promise<OAuthClient> {
    let client: OAuthClient;
    try {
      client = await this.clients.client(request.clientId);
    } catch (error) {
      if (error instanceof ClientRefused) {
        throw new AppError('client_refused', { message: `the client was refused: ${error.message}` });
      }
      throw error;
    }
    if (client.organizationId !== null && client.organizationId !== principal.organizationId) {
      throw new AppError('client_refused', {
        message: 'the client was refused: another organization registered it, for its own members only',
      });
    }
    return client;
  }

  /** The redirect to the client: its parameters added to the redirect URI's own query, with `iss` (RFC 9207). */
  private answer(redirectUri: string, parameters: Record<string, string | null>): string {
    const url = new URL(redirectUri);
    for (const [name, value] of Object.entries(parameters)) if (value !== null) url.searchParams.append(name, value);
    url.searchParams.append('iss', this.issuer);
    return url.href;
  }
}

/** A web redirect's host; a private-use one's scheme, and host if it has one (`com.example.app:`, `cursor://host`). */
function redirectTarget(redirectUri: string): string {
  const url = new URL(redirectUri);
  if (url.protocol === 'https:' || url.protocol === 'http:') return url.host;
  return url.host === '' ? url.protocol : `${url.protocol}//${url.host}`;
}
