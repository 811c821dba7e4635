import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import type { Request, Response } from 'express';
import { bearerToken } from '../auth/bearer-auth.guard';
import { KeyRequestLimiter } from '../auth/key-request-limiter';
import { PrincipalService } from '../auth/principal.service';
import { TokenService } from '../auth/token.service';
import { allowList } from '../common/cidr';
import { clientAddress } from '../common/client-address';
import { addressNotAllowed, AppError, ErrorCode, invalidArgument, Messages } from '../common/errors';
import { BEARER_SCHEME } from '../common/openapi';
import { setCaller } from '../identity/access.decorators';
import type { Principal } from '../identity/principal';
import { isPermission, maskGrants, Permission } from '../identity/roles';

const REALM = 'Bearer realm="gatehouse"';

function unauthorized(error?: string): AppError {
  return new AppError(ErrorCode.UNAUTHENTICATED, Messages.userNotAuthenticated, {
    headers: { 'WWW-Authenticate': error === undefined ? REALM : `${REALM}, error="${error}"` },
  });
}

function insufficientScope(required: readonly Permission[]): AppError {
  return new AppError(ErrorCode.PERMISSION_DENIED, Messages.insufficientPermissions, {
    headers: { 'WWW-Authenticate': `${REALM}, error="insufficient_scope", scope="${required.join(' ')}"` },
  });
}

/** What the gateway configured: the audience it protects and the permissions it requires. */
interface GatewayParameters {
  audience?: string;
  scope?: string;
}

/** The parameter from which on the query string is the client's, not the gateway's (Envoy's path_prefix ends in it). */
const IGNORED = 'ignored';

function decodeComponent(text: string): string {
  if (!text.includes('%') && !text.includes('+')) return text;
  try {
    return decodeURIComponent(text.replaceAll('+', ' '));
  } catch {
    throw invalidArgument();
  }
}

/**
 * `audience` and `scope`, each at most once, from the query string up to the first `ignored` parameter: Envoy appends
 * the client's path and query to its path_prefix, which ends in `ignored=`, so nothing from there on is read. Nothing
 * else is read either (no forwarded header, no body): nothing the client sends can change what the gateway asked.
 */
function gatewayParameters(url: string): GatewayParameters {
  const parameters: GatewayParameters = {};
  const query = url.indexOf('?');
  if (query === -1) return parameters;
  for (const pair of url.slice(query + 1).split('&')) {
    const equals = pair.indexOf('=');
    const name = decodeComponent(equals === -1 ? pair : pair.slice(0, equals));
    if (name === IGNORED) break;
    if (name !== 'audience' && name !== 'scope') continue;
    if (parameters[name] !== undefined) throw invalidArgument();
    parameters[name] = equals === -1 ? '' : decodeComponent(pair.slice(equals + 1));
  }
  return parameters;
}

/** The required permissions: names of the catalogue separated by spaces or commas. */
function requiredPermissions(value: string | undefined): Permission[] {
  if (value === undefined) return [];
  const names = value.split(/[\s,]+/).filter((name) => name !== '');
  if (!names.every(isPermission)) throw invalidArgument();
  return names;
}

/**
 * Forward authentication's scheme: the Bearer access token a gateway passes on, for the gateway's `audience` (a
 * registered resource server's, docs/adr/0033-one-audience-one-place.md), live (its key usable, its owner a member,
 * read now), with the `scope` the gateway requires: 401 or 403 with the RFC 6750 challenge. The token first: without a
 * valid one, nothing is said about audiences or permissions. The caller is the token's Principal.
 */
@Injectable()
export class GatewayTokenGuard implements CanActivate {
  static readonly securityScheme = BEARER_SCHEME;
  private readonly defaultAudience: string;

  constructor(
    private readonly principals: PrincipalService,
    tokens: TokenService,
    private readonly keyRequests: KeyRequestLimiter,
  ) {
    this.defaultAudience = tokens.audience;
  }

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const request = context.switchToHttp().getRequest<Request>();
    const header = request.headers.authorization;
    if (header === undefined || header === '') throw unauthorized();
    const token = bearerToken(header);
    if (token === null) throw unauthorized('invalid_token');
    const verified = this.principals.verifiedAccessToken(token);
    if (verified === null) throw unauthorized('invalid_token');
    const { audience, scope } = gatewayParameters(request.originalUrl);
    const required = requiredPermissions(scope);
    if (audience === undefined || audience === '') throw invalidArgument();
    // A token for another audience is 401 invalid_token whatever the gateway's audience is, registered or not (nor the
    // default one): one answer, and no registry read, so that a token holder learns nothing about which audiences
    // exist. A token names an audience that was registered when it was minted.
    if (verified.claims.aud !== audience || audience === this.defaultAudience) throw unauthorized('invalid_token');
    const found = await this.principals.live(verified);
    if (found === null) throw unauthorized('invalid_token');
    const { principal } = found;
    // The key's own policies (docs/resource-servers.md#allowlists-and-rate-limits): the address the gateway forwards
    // (TRUST_PROXY), then one request of the key counted, its RateLimit fields on every answer that follows.
    if (
      principal.credentialAllowedCidrs != null &&
      !allowList(principal.credentialAllowedCidrs).allows(clientAddress(request))
    ) {
      throw addressNotAllowed();
    }
    if (principal.credentialRateLimit != null) {
      const fields = await this.keyRequests.take(principal.credentialId!, principal.credentialRateLimit);
      const response = context.switchToHttp().getResponse<Response>();
      response.setHeader('RateLimit-Policy', fields['RateLimit-Policy']);
      response.setHeader('RateLimit', fields.RateLimit);
    }
    if (!required.every((permission) => maskGrants(principal.permissions, permission))) {
      throw insufficientScope(required);
    }
    setCaller(request, principal satisfies Principal);
    return true;
  }
}
