import { All, Controller, HttpCode, Res } from '@nestjs/common';
import { ApiOperation, ApiQuery, ApiResponse, ApiTags } from '@nestjs/swagger';
import type { Response } from 'express';
import { ApiErrors } from '../common/openapi';
import { ErrorCode } from '../common/errors';
import { InjectConfig } from '../config/config.module';
import type { AppConfiguration } from '../config/configuration';
import { Authenticated, Caller } from '../identity/access.decorators';
import type { Principal } from '../identity/principal';
import { scopeString } from '../identity/roles';
import { GatewayTokenGuard } from './gateway-token.guard';
import { cacheSeconds } from './token-expiry';

/**
 * Forward authentication for gateways (nginx auth_request, Traefik ForwardAuth, Envoy ext_authz): 200 with who the
 * request is (its scheme, GatewayTokenGuard, answers 401 or 403 with the RFC 6750 challenge). Live state as
 * introspection; a gateway may cache an
 * allowed answer for FORWARD_AUTH_CACHE_SECONDS at most, and never past the key's expiry. Every answer carries
 * `Vary: Authorization` and refusals `Cache-Control: no-store`, set before routing (http-setup.ts), so that the
 * shutdown's 503 and a database's have them too (docs/resource-servers.md#forward-auth).
 */
@ApiTags('OAuth')
@Controller('v1/forward-auth')
export class ForwardAuthController {
  private readonly maxCacheSeconds: number;

  constructor(@InjectConfig() config: AppConfiguration) {
    this.maxCacheSeconds = config.forwardAuthCacheSeconds;
  }

  @All()
  @Authenticated(GatewayTokenGuard)
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
  @ApiResponse({
    status: 200,
    description: 'Allowed: empty body, X-Gatehouse-* headers (and RateLimit-Policy, RateLimit for a rate-limited key)',
  })
  @ApiErrors(
    ErrorCode.INVALID_ARGUMENT,
    ErrorCode.UNAUTHENTICATED,
    ErrorCode.PERMISSION_DENIED,
    ErrorCode.RESOURCE_EXHAUSTED,
    ErrorCode.UNAVAILABLE,
  )
  check(@Caller() principal: Principal, @Res() response: Response): void {
    // Never cached past the key's expiry (a rotation's grace end); never at all for a key with an allowlist (the answer
    // holds for one client address) or a rate limit (each request must be counted here).
    const seconds =
      principal.credentialAllowedCidrs != null || principal.credentialRateLimit != null
        ? 0
        : cacheSeconds(this.maxCacheSeconds, principal.credentialExpiresAtMs, Date.now());
    // nginx's proxy_cache never stores a `private` answer, unless X-Accel-Expires comes before Cache-Control: nginx
    // reads the headers in order, and once it has X-Accel-Expires it skips Cache-Control (docs/resource-servers.md).
    // The refusal's Cache-Control, set before routing, is removed so that the allowed one is written after it.
    response.removeHeader('Cache-Control');
    response
      .status(200)
      .setHeader('X-Accel-Expires', String(seconds))
      .setHeader('Cache-Control', seconds === 0 ? 'no-store' : `private, max-age=${seconds}`)
      .setHeader('X-Gatehouse-User-Id', principal.userId)
      .setHeader('X-Gatehouse-Organization-Id', principal.organizationId);
    // A person's grant (docs/mcp.md#grants): its id and its resource server's scopes.
    if (principal.grantId !== undefined) {
      response
        .setHeader('X-Gatehouse-Grant-Id', principal.grantId)
        .setHeader('X-Gatehouse-Scope', principal.grantScope!);
    } else {
      response
        .setHeader('X-Gatehouse-Credential-Id', principal.credentialId!)
        // Deprecated, the same value: for gateways configured before any credential but a key (docs/resource-servers.md).
        .setHeader('X-Gatehouse-Api-Key-Id', principal.credentialId!)
        .setHeader('X-Gatehouse-Scope', scopeString(principal.permissions));
    }
    response.end();
  }
}
