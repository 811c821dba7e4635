import { Controller, Get, Header } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { Public } from '../identity/access.decorators';
import { TokenService } from './token.service';

/** Where the JWK set is served, as the metadata documents (RFC 8414, SSF) give it. */
export const JWKS_PATH = '/.well-known/jwks.json';

@ApiTags('Tokens')
@Controller()
export class JwksController {
  constructor(private readonly tokens: TokenService) {}

  /** Public keys that verify our tokens, for other services. */
  @Get(JWKS_PATH)
  @Public()
  @ApiOperation({ summary: 'Public keys (JWK set) that verify access and session tokens' })
  @ApiOkResponse({
    schema: {
      type: 'object',
      properties: {
        keys: {
          type: 'array',
          items: {
            type: 'object',
            properties: {
              kty: { type: 'string', example: 'EC' },
              crv: { type: 'string', example: 'P-256' },
              x: { type: 'string' },
              y: { type: 'string' },
              kid: { type: 'string' },
              alg: { type: 'string', example: 'ES256' },
              use: { type: 'string', example: 'sig' },
            },
          },
        },
      },
    },
  })
  @Header('Cache-Control', 'public, max-age=300')
  jwks(): ReturnType<TokenService['keys']['jwks']> {
    return this.tokens.keys.jwks();
  }
}
