import { Controller, Get, Req, Res } from '@nestjs/common';
import { ApiOperation, ApiResponse, ApiTags } from '@nestjs/swagger';
import type { Request, Response } from 'express';
import { CONSOLE_SECURITY_HEADERS } from '../common/console-assets';
import { Public } from '../identity/access.decorators';
import { AuthorizationService, AuthorizeParameters } from './authorization.service';

const PARAMETERS = [
  'response_type',
  'client_id',
  'redirect_uri',
  'code_challenge',
  'code_challenge_method',
  'state',
  'resource',
  'scope',
];

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** The page of a refusal that cannot be sent back to the client: no script, no frame, nothing from elsewhere. */
function refusalPage(message: string): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Gatehouse: request refused</title></head>
<body><h1>This sign-in request was refused</h1><p>${escapeHtml(message)}</p>
<p>Nothing was shared. Tell the app's developer, or try again from the app.</p></body></html>`;
}

/**
 * GET /oauth/authorize (docs/mcp.md#authorization-code): the authorization code grant's start, for clients of
 * resource servers (MCP clients). Until the client and its redirect URI are known, a refusal is a page here; after,
 * a redirect to the client with `error` and `iss`; a valid request goes on to the console's consent page.
 */
@ApiTags('OAuth')
@Controller('oauth/authorize')
export class AuthorizeController {
  constructor(private readonly authorization: AuthorizationService) {}

  @Get()
  @Public()
  @ApiOperation({
    summary: 'Authorization endpoint (OAuth 2.1 authorization code with PKCE S256, RFC 8707 resource, RFC 9207 iss)',
  })
  @ApiResponse({ status: 302, description: "To the consent page; or to the client's redirect URI with an error" })
  @ApiResponse({
    status: 400,
    description: 'An HTML page: the client or its redirect URI was refused',
    content: { 'text/html': { schema: { type: 'string' } } },
  })
  async authorize(@Req() request: Request, @Res() response: Response): Promise<void> {
    response.setHeader('Cache-Control', 'no-store');
    const parameters: AuthorizeParameters = {};
    for (const name of PARAMETERS) {
      const value = request.query[name];
      if (Array.isArray(value)) return this.page(response, `The parameter ${name} is given more than once.`);
      if (typeof value === 'string') parameters[name] = value;
    }
    const outcome = await this.authorization.authorize(parameters);
    if ('page' in outcome) return this.page(response, outcome.page);
    response.redirect(302, outcome.redirect);
  }

  private page(response: Response, message: string): void {
    response.status(400).set(CONSOLE_SECURITY_HEADERS).type('html').send(refusalPage(message));
  }
}
