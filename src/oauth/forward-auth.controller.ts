import { All, Controller, HttpCode, Req, Res } from '@nestjs/common';
import { ApiOperation, ApiQuery, ApiResponse, ApiTags } from '@nestjs/swagger';
import type { Request, Response } from 'express';
import { bearerToken } from '../auth/bearer-auth.guard';
import { PrincipalService } from '../auth/principal.service';
import { TokenService, VerifiedToken } from '../auth/token.service';
import { AppError, ErrorCode, invalidArgument, Messages } from '../common/errors';
import { ApiErrors } from '../common/openapi';
import { InjectConfig } from '../config/config.module';
import type { AppConfiguration } from '../config/configuration';
import { Public } from '../identity/access.decorators';
import { isPermission, maskGrants, Permission, scopeString } from '../identity/roles';
import { ResourceServersService } from '../resource-servers/resource-servers.service';
import { cacheSeconds } from './token-expiry';

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
 * Forward authentication for gateways (nginx auth_request, Traefik ForwardAuth, Envoy ext_authz): 200 with who the
 * request is, 401 or 403 with the RFC 6750 challenge. The token must be for the gateway's `audience`, a registered
 * resource server's (docs/adr/0033-one-audience-one-place.md). Live state as introspection; a gateway may cache an
 * allowed answer for FORWARD_AUTH_CACHE_SECONDS at most, and never past the key's expiry. Every answer carries
 * `Vary: Authorization` and refusals `Cache-Control: no-store`, set before routing (http-setup.ts), so that the
 * shutdown's 503 and a database's have them too (docs/resource-servers.md#forward-auth).
 */
@ApiTags('OAuth')
@Controller('v1/forward-auth')
export class ForwardAuthController {
  private readonly defaultAudience: string;
  private readonly maxCacheSeconds: number;

  constructor(
    private readonly principals: PrincipalService,
    private readonly resourceServers: ResourceServersService,
    @InjectConfig() config: AppConfiguration,
    tokens: TokenService,
  ) {
    this.defaultAudience = tokens.audience;
    this.maxCacheSeconds = config.forwardAuthCacheSeconds;
  }

  @All()
  @Public()
  @HttpCode(200)
  @ApiOperation({ summary: 'Forward authentication for gateways: is this Bearer access token allowed here, now?' })
  @ApiQuery({
    name: 'audience',
    required: true,
    type: String,
    description:
      'The registered audience the gateway protects; the token must be for it. Parameters after `ignored` are not read',
  })
  @ApiQuery({
    name: 'scope',
    required: false,
    type: String,
    description: 'Required permissions, separated by spaces or commas',
  })
  @ApiResponse({ status: 200, description: 'Allowed: empty body, X-Gatehouse-* headers' })
  @ApiErrors(400, 401, 403, 503)
  async check(@Req() request: Request, @Res() response: Response): Promise<void> {
    // The token first: without a valid one, nothing is said about audiences or permissions (401).
    const header = request.headers.authorization;
    if (header === undefined || header === '') throw unauthorized();
    const token = bearerToken(header);
    if (token === null) throw unauthorized('invalid_token');
    const verified = this.principals.verifiedAccessToken(token);
    if (verified === null) throw unauthorized('invalid_token');
    const { audience, scope } = gatewayParameters(request.originalUrl);
    const required = requiredPermissions(scope);
    if (audience === undefined || audience === '') throw invalidArgument();
    const found =
      verified.claims.aud === audience && audience !== this.defaultAudience
        ? await this.principals.forResourceServer(token, audience)
        : await this.refuseOtherAudience(verified, audience);
    if (found === null) throw unauthorized('invalid_token');
    const { principal } = found;
    if (!required.every((permission) => maskGrants(principal.permissions, permission))) {
      throw insufficientScope(required);
    }
    // Never cached past the key's expiry (a rotation's grace end).
    const seconds = cacheSeconds(this.maxCacheSeconds, principal.apiKeyExpiresAtMs, Date.now());
    // nginx's proxy_cache never stores a `private` answer, unless X-Accel-Expires comes before Cache-Control: nginx
    // reads the headers in order, and once it has X-Accel-Expires it skips Cache-Control (docs/resource-servers.md).
    // The refusal's Cache-Control, set before routing, is removed so that the allowed one is written after it.
    response.removeHeader('Cache-Control');
    response
      .status(200)
      .setHeader('X-Accel-Expires', String(seconds))
      .setHeader('Cache-Control', seconds === 0 ? 'no-store' : `private, max-age=${seconds}`)
      .setHeader('X-Gatehouse-User-Id', principal.userId)
      .setHeader('X-Gatehouse-Organization-Id', principal.organizationId)
      .setHeader('X-Gatehouse-Api-Key-Id', principal.apiKeyId!)
      .setHeader('X-Gatehouse-Scope', scopeString(principal.permissions))
      .end();
  }

  /**
   * A token for another audience than the gateway's: 401 when the token is live and the gateway's audience registered,
   * 400 for a gateway that names an audience no resource server has; a token no longer live is 401 before that. Only
   * refusals read the registry: a token names an audience that was registered when it was minted.
   */
  private async refuseOtherAudience(verified: VerifiedToken, audience: string): Promise<null> {
    if ((await this.principals.live(verified)) === null) return null;
    if (audience === this.defaultAudience || !(await this.resourceServers.isRegistered(audience))) {
      throw invalidArgument();
    }
    return null;
  }
}
