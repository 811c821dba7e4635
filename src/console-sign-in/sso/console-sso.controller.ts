import { Controller, Get, Header, Query, Redirect, Req, Res, UseFilters } from '@nestjs/common';
import { ApiOperation, ApiParam, ApiQuery, ApiResponse, ApiTags } from '@nestjs/swagger';
import type { Request, Response } from 'express';
import { clientAddress } from '../../common/client-address';
import { ErrorCode } from '../../common/errors';
import { ApiErrors } from '../../common/openapi';
import { Authenticated, Caller, Public } from '../../identity/access.decorators';
import { ConsoleSsoService, SsoSignIn } from './console-sso.service';
import { SsoStartQuery } from './dto/sso-start.query';
import { SsoCallbackGuard } from './sso-callback.guard';
import { SsoPageFilter } from './sso-page.filter';

interface Redirection {
  url: string;
  statusCode: 302;
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
      'an organization without single sign-on (an unknown one too).',
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
  @Redirect()
  @Header('Cache-Control', 'no-store')
  @Header('Referrer-Policy', 'no-referrer')
  async start(
    @Query() query: SsoStartQuery,
    @Req() request: Request,
    @Res({ passthrough: true }) response: Response,
  ): Promise<Redirection> {
    const started = await this.sso.start(query.org, clientAddress(request));
    response.setHeader('Set-Cookie', started.cookie);
    return { url: started.url, statusCode: 302 };
  }

  @Get('callback/:organization')
  @Authenticated(SsoCallbackGuard)
  @UseFilters(SsoPageFilter)
  @ApiOperation({
    summary: "The identity provider's redirect back: sign in to the console",
    description:
      "The redirect URI of the organization's people issuer, registered at its identity provider (one per " +
      'organization: RFC 9700 section 4.4.2). For the browser the identity provider sends back, with its `code` and ' +
      '`state` (or `error`) and the gatehouse_sso cookie. 302 to `<PUBLIC_BASE_URL>/console/sign-in#code=<code>`, a ' +
      'one-time sign-in link the console trades at POST /v1/console/sessions. A refusal is an HTML page (not JSON) ' +
      'with the status of its code: 400 (unknown, used, expired or foreign state, a sign-in started for another ' +
      "organization, a refused code or ID token, the identity provider's error), 401 (no code and no state), 403 (no " +
      'access: no membership and no just-in-time role, an e-mail address that is missing, unverified or outside the ' +
      'allowed domains), 503 (the identity provider cannot be reached).',
  })
  @ApiParam({
    name: 'organization',
    type: String,
    description: "The organization's name (URL-encoded), as GET /v1/console/sso's `org` names it",
  })
  @ApiQuery({ name: 'code', type: String, required: false, description: 'The authorization code' })
  @ApiQuery({ name: 'state', type: String, required: false, description: 'The state the sign-in started with' })
  @ApiQuery({
    name: 'error',
    type: String,
    required: false,
    description: "The identity provider's refusal (RFC 6749 section 4.1.2.1)",
  })
  @ApiResponse({
    status: 302,
    description: "Signed in: sent to the console's sign-in page with a one-time code in the fragment",
    headers: { Location: { description: '<PUBLIC_BASE_URL>/console/sign-in#code=<code>', schema: { type: 'string' } } },
  })
  @Redirect()
  @Header('Cache-Control', 'no-store')
  @Header('Referrer-Policy', 'no-referrer')
  callback(@Caller() signIn: SsoSignIn, @Res({ passthrough: true }) response: Response): Redirection {
    response.setHeader('Set-Cookie', this.sso.clearedCookie);
    return { url: signIn.url, statusCode: 302 };
  }

  /** The guard refuses every request here (ConsoleSsoService.complete without an organization): never reached. */
  @Get('callback')
  @Authenticated(SsoCallbackGuard)
  @UseFilters(SsoPageFilter)
  @ApiOperation({
    summary: 'The old redirect URI, shared by every organization: completes no sign-in',
    description:
      'A 400 HTML page naming the redirect URI to register instead, `<PUBLIC_BASE_URL>/v1/console/sso/' +
      "callback/<organization>`: one URI shared by every identity provider lets one organization's provider have " +
      "another's code sent to it (the mix-up attack, RFC 9700 section 4.4), so Gatehouse no longer sends it. The " +
      'gatehouse_sso cookie is left alone. Without code, state and error: 401, as at the redirect URI.',
  })
  // Its answers are HTML pages, which the document's error responses (JSON bodies) do not describe: the one status
  // declared says so, rather than the empty 200 @nestjs/swagger would otherwise add.
  @ApiResponse({
    status: 200,
    description: 'Never: every request gets an HTML page, 400 (401 without code, state and error)',
  })
  @Redirect()
  @Header('Cache-Control', 'no-store')
  @Header('Referrer-Policy', 'no-referrer')
  oldCallback(@Caller() signIn: SsoSignIn): Redirection {
    return { url: signIn.url, statusCode: 302 };
  }
}
