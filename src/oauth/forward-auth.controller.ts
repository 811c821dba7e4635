import { All, Controller, HttpCode, Req, Res } from '@nestjs/common';
import { ApiOperation, ApiQuery, ApiResponse, ApiTags } from '@nestjs/swagger';
import type { Request, Response } from 'express';
import { bearerToken } from '../auth/bearer-auth.guard';
import { PrincipalService } from '../auth/principal.service';
import { TokenService } from '../auth/token.service';
import { AppError, ErrorCode, invalidArgument, Messages } from '../common/errors';
import { ApiErrors } from '../common/openapi';
import { InjectConfig } from '../config/config.module';
import type { AppConfiguration } from '../config/configuration';
import { Public } from '../identity/access.decorators';
import { isPermission, maskGrants, Permission, scopeString } from '../identity/roles';
import { ResourceServersService } from '../resource-servers/resource-servers.service';

const REALM = 'Bearer realm="gatehouse"';
/** A refusal is never cached: the next request may carry a new token, or the member a new role. */
const NO_STORE = { 'Cache-Control': 'no-store' };

function unauthorized(error?: string): AppError {
  return new AppError(ErrorCode.UNAUTHENTICATED, Messages.userNotAuthenticated, {
    headers: { 'WWW-Authenticate': error === undefined ? REALM : `${REALM}, error="${error}"`, ...NO_STORE },
  });
}

function insufficientScope(required: readonly Permission[]): AppError {
  return new AppError(ErrorCode.PERMISSION_DENIED, Messages.insufficientPermissions, {
    headers: { 'WWW-Authenticate': `${REALM}, error="insufficient_scope", scope="${required.join(' ')}"`, ...NO_STORE },
  });
}

/** One query parameter at most once, as a string; undefined when absent. */
function single(value: unknown): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string') throw invalidArgument();
  return value;
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
 * request is, 401 or 403 with the RFC 6750 challenge. Live state as introspection; a gateway may cache an allowed
 * answer for FORWARD_AUTH_CACHE_SECONDS at most (docs/resource-servers.md#forward-auth).
 */
@ApiTags('OAuth')
@Controller('v1/forward-auth')
export class ForwardAuthController {
  private readonly defaultAudience: string;
  private readonly cacheControl: string;
  private readonly accelExpires: string;

  constructor(
    private readonly principals: PrincipalService,
    private readonly resourceServers: ResourceServersService,
    @InjectConfig() config: AppConfiguration,
    tokens: TokenService,
  ) {
    this.defaultAudience = tokens.audience;
    this.cacheControl =
      config.forwardAuthCacheSeconds === 0 ? 'no-store' : `private, max-age=${config.forwardAuthCacheSeconds}`;
    // nginx's proxy_cache never stores a `private` answer, unless X-Accel-Expires comes before Cache-Control: nginx
    // reads the headers in order, and once it has X-Accel-Expires it skips Cache-Control (docs/resource-servers.md).
    this.accelExpires = String(config.forwardAuthCacheSeconds);
  }

  @All()
  @Public()
  @HttpCode(200)
  @ApiOperation({ summary: 'Forward authentication for gateways: is this Bearer access token allowed here, now?' })
  @ApiQuery({ name: 'scope', required: false, description: 'Required permissions, separated by spaces or commas' })
  @ApiQuery({
    name: 'audience',
    required: false,
    description: 'The audience the gateway protects (default: the default audience)',
  })
  @ApiResponse({ status: 200, description: 'Allowed: empty body, X-Gatehouse-* headers' })
  @ApiErrors(400, 401, 403, 503)
  async check(@Req() request: Request, @Res() response: Response): Promise<void> {
    const required = requiredPermissions(single(request.query.scope));
    const audience = single(request.query.audience) ?? this.defaultAudience;
    if (audience !== this.defaultAudience && !(await this.resourceServers.isRegistered(audience))) {
      throw invalidArgument();
    }
    const header = request.headers.authorization;
    if (header === undefined || header === '') throw unauthorized();
    const token = bearerToken(header);
    if (token === null) throw unauthorized('invalid_token');
    const found = await this.principals.forResourceServer(token, audience);
    if (found === null) throw unauthorized('invalid_token');
    const { principal } = found;
    if (!required.every((permission) => maskGrants(principal.permissions, permission))) {
      throw insufficientScope(required);
    }
    response
      .status(200)
      .setHeader('X-Accel-Expires', this.accelExpires) // before Cache-Control: see the constructor
      .setHeader('Cache-Control', this.cacheControl)
      .setHeader('X-Gatehouse-User-Id', principal.userId)
      .setHeader('X-Gatehouse-Organization-Id', principal.organizationId)
      .setHeader('X-Gatehouse-Api-Key-Id', principal.apiKeyId!)
      .setHeader('X-Gatehouse-Scope', scopeString(principal.permissions))
      .end();
  }
}
