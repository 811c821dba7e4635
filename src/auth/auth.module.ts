import { Module } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { JwtModule } from '@nestjs/jwt';
import { PassportModule } from '@nestjs/passport';
import { ApiKeysModule } from '../api-keys/api-keys.module';
import { IdentityModule } from '../identity/identity.module';
import { ApiKeyGuard } from './api-key.guard';
import { BearerAuthGuard } from './bearer-auth.guard';
import { BearerStrategy } from './bearer.strategy';
import { JwksController } from './jwks.controller';
import { PrincipalService } from './principal.service';
import { TokenController } from './token.controller';
import { TokenService } from './token.service';

@Module({
  imports: [PassportModule, JwtModule.register({}), ApiKeysModule, IdentityModule],
  controllers: [TokenController, JwksController],
  providers: [
    TokenService,
    PrincipalService,
    BearerStrategy,
    ApiKeyGuard,
    { provide: APP_GUARD, useClass: BearerAuthGuard },
  ],
  exports: [TokenService],
})
export class AuthModule {}
