import { Controller, Delete, Header, HttpCode, Post, Req, Res } from '@nestjs/common';
import { ApiBody, ApiNoContentResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { Request, Response } from 'express';
import { CurrentRequestContext, RequestContext } from '../audit/request-context';
import { ApiErrors } from '../common/openapi';
import { ErrorCode } from '../common/errors';
import { Authenticated, Caller } from '../identity/access.decorators';
import type { Principal } from '../identity/principal';
import type { ConsoleSession } from './console-sign-in.service';
import { ConsoleSignInService } from './console-sign-in.service';
import { AcceptInvitationDto, ConsoleSessionResponse, CreateConsoleSessionDto } from './dto/console-session.dto';
import { InvitationGuard } from './invitation.guard';
import { SignInLinkGuard } from './sign-in-link.guard';
import { BINDING_COOKIE, cookieValue } from './sso/sso-rules';

@ApiTags('Console')
@Controller('v1/console/sessions')
export class ConsoleSignInController {
  constructor(private readonly signIn: ConsoleSignInService) {}

  /** Trades a one-time sign-in link's code for a session token (docs/api.md#post-v1consolesessions). */
  @Post()
  @Authenticated(SignInLinkGuard)
  @ApiOperation({
    summary: "Trade a one-time console sign-in link's code for a session token",
    description:
      'Public. Each link works once, for 10 minutes. A link made by single sign-on works only with the gatehouse_sso ' +
      'cookie of the browser that started the sign-in (401 otherwise, the link left unused), and the cookie is removed ' +
      'once traded; a link of the admin CLI works in any browser. Failed attempts are limited per client address.',
  })
  @ApiBody({ type: CreateConsoleSessionDto })
  @ApiOkResponse({
    type: ConsoleSessionResponse,
    headers: {
      'Set-Cookie': {
        description: 'gatehouse_sso removed, when the request had it',
        schema: { type: 'string' },
        required: false,
      },
    },
  })
  @ApiErrors(
    ErrorCode.INVALID_ARGUMENT,
    ErrorCode.UNAUTHENTICATED,
    ErrorCode.PAYLOAD_TOO_LARGE,
    ErrorCode.RESOURCE_EXHAUSTED,
    ErrorCode.UNAVAILABLE,
  )
  @HttpCode(200)
  @Header('Cache-Control', 'no-store')
  @Header('Pragma', 'no-cache')
  create(
    @Caller() session: ConsoleSession,
    @Req() request: Request,
    @Res({ passthrough: true }) response: Response,
  ): ConsoleSessionResponse {
    if (cookieValue(request.headers.cookie, BINDING_COOKIE) !== undefined) {
      response.setHeader('Set-Cookie', this.signIn.clearedBindingCookie);
    }
    return ConsoleSessionResponse.from(session);
  }

  /** Signs out: every session token of the caller in this organization stops (docs/api.md#delete-v1consolesessionscurrent). */
  @Delete('current')
  @Authenticated({ sessionOnly: true })
  @ApiOperation({
    summary: "Sign out: end the caller's session tokens in this organization",
    description:
      'With a session token. Every session token of the member in this organization issued until now is refused ' +
      'from then on (console tabs and CLI sessions alike); API keys and their access tokens are not touched. ' +
      'An access token gets 403 PERMISSION_DENIED.',
  })
  @ApiNoContentResponse({ description: 'Signed out' })
  @HttpCode(204)
  async signOut(@Caller() principal: Principal, @CurrentRequestContext() context: RequestContext): Promise<void> {
    await this.signIn.signOut(principal, context);
  }
}

/** An admin's invitation, used once (docs/api.md#post-v1consoleinvitationsaccept). */
@ApiTags('Console')
@Controller('v1/console/invitations')
export class ConsoleInvitationsController {
  @Post('accept')
  @Authenticated(InvitationGuard)
  @ApiOperation({
    summary: "Use an invitation's code: become a member with its role and get a session token",
    description:
      'Public. Each invitation works once, for 7 days, in any browser; the person keeps the role they have if they ' +
      'became a member meanwhile. Audited as member.added (reason invitation) and console.signed_in. Failed attempts ' +
      "count with the sign-in links'.",
  })
  @ApiBody({ type: AcceptInvitationDto })
  @ApiOkResponse({ type: ConsoleSessionResponse })
  @ApiErrors(
    ErrorCode.INVALID_ARGUMENT,
    ErrorCode.UNAUTHENTICATED,
    ErrorCode.PAYLOAD_TOO_LARGE,
    ErrorCode.RESOURCE_EXHAUSTED,
    ErrorCode.UNAVAILABLE,
  )
  @HttpCode(200)
  @Header('Cache-Control', 'no-store')
  @Header('Pragma', 'no-cache')
  accept(@Caller() session: ConsoleSession): ConsoleSessionResponse {
    return ConsoleSessionResponse.from(session);
  }
}
