import { Controller, Header, HttpCode, Post } from '@nestjs/common';
import { ApiBody, ApiConsumes, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { ApiOAuthErrors } from '../common/openapi';
import { TokenAuthenticator, TokenRefusal } from '../auth/token-authenticator';
import { Form, FormParameters } from '../common/client-credentials';
import { isClientAddress } from '../common/client-address';
import { AppError, ErrorCode } from '../common/errors';
import { Authenticated, Caller } from '../identity/access.decorators';
import { isPermission, PermissionMask, scopeString } from '../identity/roles';
import { ResourceServerGuard } from '../resource-servers/resource-server.guard';
import type { AuthenticatedResourceServer } from '../resource-servers/resource-servers.service';
import { OAuthErrorBody } from './openapi';
import { tokenExpiry } from './token-expiry';

/** RFC 7662 section 2.2: an active token's members, or `{ active: false }` alone. */
export type IntrospectionResponse =
  | { active: false }
  | {
      active: true;
      scope: string;
      client_id: string;
      sub: string;
      org: string;
      aud: string;
      iss: string;
      exp: number;
      iat: number;
      jti: string;
      token_type: 'Bearer';
      /** The key's allowlist, when it has one: a caller that sent no client_ip checks it itself. */
      allowed_cidrs?: string[];
    };

const INACTIVE: IntrospectionResponse = Object.freeze({ active: false });

/**
 * The token's scope now: Gatehouse's permissions as the key and the role allow them now, and the resource server's own
 * scopes as minted (a role does not bound them: docs/adr/0049-resource-server-scopes.md).
 */
function liveScope(permissions: PermissionMask, minted: string | undefined): string {
  const own = minted === undefined ? [] : minted.split(' ').filter((name) => name !== '' && !isPermission(name));
  const live = scopeString(permissions);
  return own.length === 0 ? live : [live, ...own].filter((part) => part !== '').join(' ');
}

/**
 * RFC 7662 introspection for registered resource servers: the token's live state, as the TokenAuthenticator decides it
 * for every Bearer request (the key, its owner's membership and role now), so a revoked key's tokens are inactive at once on every instance. Active
 * only for a token minted for the caller's own audience (docs/adr/0033-one-audience-one-place.md). `exp` is when the
 * token stops working, its key's expiry included, so a verifier may keep the answer until then.
 */
@ApiTags('OAuth')
@Controller('oauth/introspect')
export class IntrospectionController {
  constructor(private readonly authenticator: TokenAuthenticator) {}

  @Post()
  @Authenticated(ResourceServerGuard)
  @HttpCode(200)
  @Header('Cache-Control', 'no-store')
  @ApiOperation({ summary: "A token's live state, for a registered resource server (RFC 7662)" })
  @ApiConsumes('application/x-www-form-urlencoded')
  @ApiBody({
    schema: {
      type: 'object',
      required: ['token'],
      properties: {
        token: { type: 'string', description: 'The access token' },
        token_type_hint: { type: 'string', description: 'Accepted and ignored: Gatehouse has one kind of token here' },
        client_ip: {
          type: 'string',
          description:
            "The address the token's request came from (IPv4 or IPv6): a token of a key with an allowlist is active " +
            'only for an address inside it',
        },
        client_id: {
          type: 'string',
          description: "The resource server's client_id (client_secret_post; or HTTP Basic)",
        },
        client_secret: { type: 'string', description: 'Its client_secret' },
      },
    },
  })
  @ApiOkResponse({
    description:
      '`{ "active": false }`, or the claims of an active token for the caller\'s audience, with its scope now',
  })
  @ApiOAuthErrors(OAuthErrorBody, {
    [ErrorCode.INVALID_ARGUMENT]: 'invalid_request',
    [ErrorCode.UNAUTHENTICATED]: 'invalid_client',
  })
  async introspect(
    @Caller() server: AuthenticatedResourceServer,
    @Form() form: FormParameters,
  ): Promise<IntrospectionResponse> {
    if (form.token === undefined) throw new AppError('introspection_request_invalid', { message: 'token is required' });
    const clientIp = form.client_ip;
    if (clientIp !== undefined && !isClientAddress(clientIp)) {
      throw new AppError('introspection_request_invalid', { message: 'client_ip is not an IP address' });
    }
    // The key's allowlist, read with the key, against client_ip when given (docs/resource-servers.md#allowlists-and-rate-limits).
    const found = await this.authenticator.authenticate(form.token, {
      audience: server.audience,
      address: clientIp === undefined ? undefined : () => clientIp,
      usage: 'introspection',
    });
    // RFC 7662 section 2.2: every refusal, whatever its reason, is the same `{ active: false }`.
    if (found instanceof TokenRefusal) return INACTIVE;
    this.authenticator.countUse(found, 'introspection', true);
    const { principal, claims } = found;
    const allowed = principal.credentialAllowedCidrs;
    const answer: Extract<IntrospectionResponse, { active: true }> = {
      active: true,
      scope: principal.grantScope ?? liveScope(principal.permissions, claims.scope),
      client_id: claims.client_id!,
      sub: principal.userId,
      org: principal.organizationId,
      aud: claims.aud,
      iss: claims.iss,
      exp: tokenExpiry(claims.exp, principal.credentialExpiresAtMs),
      iat: claims.iat,
      jti: claims.jti,
      token_type: 'Bearer',
    };
    if (allowed != null) answer.allowed_cidrs = allowed.split(',');
    return answer;
  }
}
