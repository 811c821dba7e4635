import { Module } from '@nestjs/common';
import { AuditModule } from '../audit/audit.module';
import { APP_CONFIG, SECRETS } from '../config/config.module';
import type { AppConfiguration } from '../config/configuration';
import type { Secrets } from '../config/local-secrets';
import { RateLimitStorageModule } from '../common/rate-limit-storage.module';
import { IdentityModule } from '../identity/identity.module';
import { MembersModule } from '../members/members.module';
import { CredentialCipher } from '../integrations/credential-cipher';
import { DEFAULT_FEDERATION_TIMINGS, FEDERATION_TIMINGS } from './federation-timings';
import { IdTokenUses } from './id-token-uses';
import { IdTokenUsesRepository } from './id-token-uses.repository';
import { IssuerKeys } from './issuer-keys';
import { FederatedPeople } from './people';
import { SingleSignOnController } from './single-sign-on.controller';
import { SubjectTokenVerifier } from './subject-token-verifier';
import { TRUSTED_ISSUER_CIPHER, TrustedIssuersService } from './trusted-issuers.service';
import { TrustedIssuersRepository } from './trusted-issuers.repository';
import { TrustedIssuer } from './trusted-issuer.entity';
import { IdTokenUse } from './id-token-use.entity';
import { EntitiesModule } from '../database/entities.module';

/**
 * Federation (docs/federation.md): the identity providers organizations trust, and the verification of the tokens
 * they issue (the subject tokens of the token exchange); an organization's admins set up its people issuer (single
 * sign-on) at /v1/organization/single-sign-on.
 */
@Module({
  imports: [
    EntitiesModule.forFeature([TrustedIssuer, IdTokenUse]),
    IdentityModule,
    AuditModule,
    MembersModule,
    RateLimitStorageModule,
  ],
  controllers: [SingleSignOnController],
  providers: [
    TrustedIssuersRepository,
    TrustedIssuersService,
    IssuerKeys,
    SubjectTokenVerifier,
    FederatedPeople,
    IdTokenUsesRepository,
    IdTokenUses,
    { provide: FEDERATION_TIMINGS, useValue: DEFAULT_FEDERATION_TIMINGS },
    {
      // Sealed with the same keys as the provider credentials (one key rotation covers both), bound to this table.
      provide: TRUSTED_ISSUER_CIPHER,
      inject: [APP_CONFIG, SECRETS],
      useFactory: (config: AppConfiguration, secrets: Secrets) =>
        new CredentialCipher(
          { id: config.integrations.encryptionKeyId, key: secrets.integrationsEncryptionKey },
          config.integrations.previousEncryptionKeys,
          'trusted_issuers',
        ),
    },
  ],
  exports: [TrustedIssuersService, SubjectTokenVerifier, FederatedPeople, IdTokenUses],
})
export class FederationModule {}
