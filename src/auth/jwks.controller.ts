import { Controller, Get, Header } from '@nestjs/common';
import { Public } from './auth.decorators';
import { TokenService } from './token.service';

@Controller('.well-known')
export class JwksController {
  constructor(private readonly tokens: TokenService) {}

  /** Public keys that verify our tokens, for other services. */
  @Get('jwks.json')
  @Public()
  @Header('Cache-Control', 'public, max-age=300')
  jwks(): ReturnType<TokenService['keys']['jwks']> {
    return this.tokens.keys.jwks();
  }
}
