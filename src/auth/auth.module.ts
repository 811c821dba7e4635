import { Module } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { JwtModule } from '@nestjs/jwt';
import { ApiKeysModule } from '../api-keys/api-keys.module';
import { CredentialsModule } from '../credentials/credentials.module';
import { AuditModule } from '../audit/audit.module';
import { IdentityModule } from '../identity/identity.module';
import { MetricsModule } from '../metrics/metrics.module';
import { ApiKeyGuard } from './api-key.guard';
import { BearerAuthGuard } from './bearer-auth.guard';
import { JwksController } from './jwks.controller';
import { JwtSigner } from './jwt-signer';
import { CredentialLivenessKinds } from './credential-liveness';
import { TokenAuthenticator } from './token-authenticator';
import { TokenController } from './token.controller';
import { TokenService } from './token.service';
import { KeyExchangeRules } from './key-exchange';
import { KeyRequestLimiter } from './key-request-limiter';
import { TokenAttemptLimiter } from './token-attempt-limiter';
import { RateLimitStorageModule } from '../common/rate-limit-storage.module';
import { ResourceServersModule } from '../resource-servers/resource-servers.module';
import { TokenExchangeService } from './token-exchange.service';
import { SubjectTokenExchangeService } from './subject-token-exchange.service';
import { FederationModule } from '../federation/federation.module';
import { WorkloadIdentitiesModule } from '../workload-identities/workload-identities.module';

@Module({
  imports: [
    JwtModule.register({}),
    ApiKeysModule,
    CredentialsModule,
    IdentityModule,
    AuditModule,
    RateLimitStorageModule,
    MetricsModule,
    ResourceServersModule,
    FederationModule,
    WorkloadIdentitiesModule,
  ],
  controllers: [TokenController, JwksController],
  providers: [
    TokenService,
    JwtSigner,
    TokenAuthenticator,
    CredentialLivenessKinds,
    KeyExchangeRules,
    ApiKeyGuard,
    TokenAttemptLimiter,
    KeyRequestLimiter,
    TokenExchangeService,
    SubjectTokenExchangeService,
    { provide: APP_GUARD, useClass: BearerAuthGuard },
  ],
  exports: [TokenService, TokenExchangeService, SubjectTokenExchangeService, TokenAuthenticator, KeyRequestLimiter],
})
export class AuthModule {}
