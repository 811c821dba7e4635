import { applyDecorators, Controller, Get, Header, Redirect, Req, Res, UseFilters } from '@nestjs/common';
import { ValidQuery } from '../../common/validation.pipe';
import { ApiOperation, ApiParam, ApiQuery, ApiResponse, ApiTags } from '@nestjs/swagger';
import type { Request, Response } from 'express';
import { clientAddress } from '../../common/client-address';
import { ErrorCode } from '../../common/errors';
import { ApiErrors } from '../../common/openapi';
import { Authenticated, Caller, Public } from '../../identity/access.decorators';
import { ConsoleSsoService, SsoSignIn } from './console-sso.service';
import { SsoStartQuery } from './dto/sso-start.query';
import { SsoCallbackGuard } from './sso-callback.guard';
import { SsoPageFilter, SsoStartPageFilter } from './sso-page.filter';

interface Redirection {
  url: string;
  statusCode: 302;
}

/** What both redirect URIs answer (docs/api.md#get-v1consolessocallback). */
const CALLBACK_ANSWERS =
  'For the browser the identity provider sends back, with its `code` and `state` (or `error`) and the gatehouse_sso ' +
  'cookie. 302 to `<PUBLIC_BASE_URL>/console/sign-in#code=<code>`, a one-time sign-in link the console trades at ' +
  'POST /v1/console/sessions, in this browser only: the gatehouse_sso cookie is set again for the 10 minutes of the ' +
  'link. A refusal is an HTML page (not JSON) with the status of its code: 400 (unknown, used, ' +
  'expired or foreign state, an answer at another redirect URI than its sign-in was started with, a missing or ' +
  "wrong `iss`, a refused code or ID token, the identity provider's error), 401 (no code and no state), 403 (no " +
  'access: no membership and no just-in-time role, an e-mail address that is missing, unverified or outside the ' +
  'allowed domains), 503 (the identity provider cannot be reached).';

/**
 * What both redirect URIs are (docs/api.md#get-v1consolessocallback): the answer with the binding cookie is the
 * credential, a refusal is a page, a success a redirect to the one-time sign-in link, never cached.
 */
function CallbackRoute(): MethodDecorator {
  return applyDecorators(
    Authenticated(SsoCallbackGuard),
    UseFilters(SsoPageFilter),
    ApiQuery({ name: 'code', type: String, required: false, description: 'The authorization code' }),
    ApiQuery({ name: 'state', type: String, required: false, description: 'The state the sign-in started with' }),
    ApiQuery({
      name: 'error',
      type: String,
      required: false,
      description: "The identity provider's refusal (RFC 6749 section 4.1.2.1)",
    }),
    ApiResponse({
      status: 302,
      description: "Signed in: sent to the console's sign-in page with a one-time code in the fragment",
      headers: {
        Location: { description: '<PUBLIC_BASE_URL>/console/sign-in#code=<code>', schema: { type: 'string' } },
      },
    }),
    Redirect(),
    Header('Cache-Control', 'no-store'),
    Header('Referrer-Policy', 'no-referrer'),
  );
}

/** Console single sign-on through the organization's identity provider (docs/api.md#get-v1consolesso). */
@ApiTags('Console')
@Controller('v1/console/sso')
export class ConsoleSsoController {
  constructor(private readonly sso: ConsoleSsoService) {}

  @Get()
  @Public()
  @ApiOperation({
    summary: "Start a console sign-in at the organization's identity provider",
    description:
      'Public, for a browser: 302 to the people issuer of the organization (authorization code with PKCE, state, ' +
      'nonce, scope `openid email profile`), with an HttpOnly cookie that binds the sign-in to this browser. 404 for ' +
      'an organization without single sign-on (an unknown one too). A refusal is JSON, or an HTML page with a link ' +
      'back to the sign-in page when the request prefers `text/html` (a browser).',
  })
  @ApiResponse({
    status: 302,
    description: "Sent to the identity provider's authorization endpoint",
    headers: {
      Location: { description: "The issuer's authorization_endpoint with the request", schema: { type: 'string' } },
      'Set-Cookie': { description: 'gatehouse_sso: binds the sign-in to this browser', schema: { type: 'string' } },
    },
  })
  @ApiErrors(ErrorCode.INVALID_ARGUMENT, ErrorCode.NOT_FOUND, ErrorCode.RESOURCE_EXHAUSTED, ErrorCode.UNAVAILABLE)
  @UseFilters(SsoStartPageFilter)
  @Redirect()
  @Header('Cache-Control', 'no-store')
  @Header('Referrer-Policy', 'no-referrer')
  async start(
    @ValidQuery() query: SsoStartQuery,
    @Req() request: Request,
    @Res({ passthrough: true }) response: Response,
  ): Promise<Redirection> {
    const started = await this.sso.start(query.org, clientAddress(request));
    response.setHeader('Set-Cookie', started.cookie);
    return { url: started.url, statusCode: 302 };
  }

  @Get('callback')
  @CallbackRoute()
  @ApiOperation({
    summary:
      "The identity provider's redirect back, for a provider that sends RFC 9207's `iss`: sign in to the console",
    description:
      'The redirect URI of every people issuer whose discovery document announces ' +
      '`authorization_response_iss_parameter_supported: true` (RFC 9207), registered at its identity provider: the ' +
      "answer's `iss` is required and must name the issuer the sign-in was started at (RFC 9700 section 4.4.2). A " +
      'sign-in started with the per-organization redirect URI (a provider that does not announce it) is refused here. ' +
      CALLBACK_ANSWERS,
  })
  @ApiQuery({ name: 'iss', type: String, required: false, description: 'The issuer (RFC 9207), required here' })
  sharedCallback(@Caller() signIn: SsoSignIn, @Res({ passthrough: true }) response: Response): Redirection {
    return this.signedIn(signIn, response);
  }

  @Get('callback/:organization')
  @CallbackRoute()
  @ApiOperation({
    summary: "The identity provider's redirect back, for a provider without RFC 9207's `iss`: sign in to the console",
    description:
      "The redirect URI of the organization's people issuer when its discovery document does not announce " +
      '`authorization_response_iss_parameter_supported: true`, registered at its identity provider: one per ' +
      'organization, so that where the answer arrives says whose it is (RFC 9700 section 4.4.2). A sign-in started ' +
      'for another organization, or with the shared redirect URI, is refused here. ' +
      CALLBACK_ANSWERS,
  })
  @ApiParam({
    name: 'organization',
    type: String,
    description: "The organization's name (URL-encoded), as GET /v1/console/sso's `org` names it",
  })
  callback(@Caller() signIn: SsoSignIn, @Res({ passthrough: true }) response: Response): Redirection {
    return this.signedIn(signIn, response);
  }

  /** The person sent on to the one-time sign-in link the guard made, the binding cookie kept for the link's trade. */
  private signedIn(signIn: SsoSignIn, response: Response): Redirection {
    response.setHeader('Set-Cookie', signIn.cookie);
    return { url: signIn.url, statusCode: 302 };
  }
}
