import { Body, Controller, Delete, Header, HttpCode, Post, Req } from '@nestjs/common';
import { ApiNoContentResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { Request } from 'express';
import { CurrentRequestContext, RequestContext } from '../audit/request-context';
import { clientAddress } from '../common/client-address';
import { ApiErrors } from '../common/openapi';
import { CurrentPrincipal, Public, SessionOnly } from '../identity/access.decorators';
import type { Principal } from '../identity/principal';
import { ConsoleSignInService } from './console-sign-in.service';
import { ConsoleSessionResponse, CreateConsoleSessionDto } from './dto/console-session.dto';

@ApiTags('Console')
@Controller('v1/console/sessions')
export class ConsoleSignInController {
  constructor(private readonly signIn: ConsoleSignInService) {}

  /** Trades a one-time sign-in link's code for a session token (docs/api.md#post-v1consolesessions). */
  @Post()
  @Public()
  @ApiOperation({
    summary: "Trade a one-time console sign-in link's code for a session token",
    description: 'Public. Each link works once, for 10 minutes. Failed attempts are limited per client address.',
  })
  @ApiOkResponse({ type: ConsoleSessionResponse })
  @ApiErrors(400, 401, 413, 429, 503)
  @HttpCode(200)
  @Header('Cache-Control', 'no-store')
  @Header('Pragma', 'no-cache')
  async create(
    @Req() request: Request,
    @Body() body: CreateConsoleSessionDto,
    @CurrentRequestContext() context: RequestContext,
  ): Promise<ConsoleSessionResponse> {
    return ConsoleSessionResponse.from(await this.signIn.signIn(body.code, clientAddress(request), context));
  }

  /** Signs out: every session token of the caller in this organization stops (docs/api.md#delete-v1consolesessionscurrent). */
  @Delete('current')
  @SessionOnly()
  @ApiOperation({
    summary: "Sign out: end the caller's session tokens in this organization",
    description:
      'With a session token. Every session token of the member in this organization issued until now is refused ' +
      'from then on (console tabs and CLI sessions alike); API keys and their access tokens are not touched. ' +
      'An access token gets 403 PERMISSION_DENIED.',
  })
  @ApiNoContentResponse({ description: 'Signed out' })
  @HttpCode(204)
  async signOut(
    @CurrentPrincipal() principal: Principal,
    @CurrentRequestContext() context: RequestContext,
  ): Promise<void> {
    await this.signIn.signOut(principal, context);
  }
}
