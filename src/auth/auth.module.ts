import { Module } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { JwtModule } from '@nestjs/jwt';
import { ApiKeysModule } from '../api-keys/api-keys.module';
import { AuditModule } from '../audit/audit.module';
import { IdentityModule } from '../identity/identity.module';
import { MetricsModule } from '../metrics/metrics.module';
import { ApiKeyGuard } from './api-key.guard';
import { BearerAuthGuard } from './bearer-auth.guard';
import { JwksController } from './jwks.controller';
import { JwtSigner } from './jwt-signer';
import { PrincipalService } from './principal.service';
import { TokenController } from './token.controller';
import { TokenService } from './token.service';
import { KeyExchangeRules } from './key-exchange';
import { TokenAttemptLimiter } from './token-attempt-limiter';
import { RateLimitStorageModule } from '../common/rate-limit-storage.module';
import { ResourceServersModule } from '../resource-servers/resource-servers.module';
import { TokenExchangeService } from './token-exchange.service';

@Module({
  imports: [
    JwtModule.register({}),
    ApiKeysModule,
    IdentityModule,
    AuditModule,
    RateLimitStorageModule,
    MetricsModule,
    ResourceServersModule,
  ],
  controllers: [TokenController, JwksController],
  providers: [
    TokenService,
    JwtSigner,
    PrincipalService,
    KeyExchangeRules,
    ApiKeyGuard,
    TokenAttemptLimiter,
    TokenExchangeService,
    { provide: APP_GUARD, useClass: BearerAuthGuard },
  ],
  exports: [TokenService, TokenExchangeService, PrincipalService],
})
export class AuthModule {}
