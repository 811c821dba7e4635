import { Module } from '@nestjs/common';
import { SECRETS } from '../config/config.module';
import { IdentityModule } from '../identity/identity.module';
import type { Secrets } from '../config/local-secrets';
import { AuditCursorCodec } from './audit-cursor';
import { AuditEventsController } from './audit-events.controller';
import { AuditRetention } from './audit-retention';
import { AuditRepository } from './audit.repository';
import { AuditService } from './audit.service';
import { AuditEvent } from './audit-event.entity';
import { EntitiesModule } from '../database/entities.module';

@Module({
  // identity: the e-mail addresses shown beside user ids in the audit log.
  imports: [EntitiesModule.forFeature([AuditEvent]), IdentityModule],
  controllers: [AuditEventsController],
  providers: [
    AuditRepository,
    AuditService,
    AuditRetention,
    // Cursors are keyed from the pepper: every instance of a deployment shares it (docs/adr/0018-audit-event-pages.md).
    {
      provide: AuditCursorCodec,
      useFactory: (secrets: Secrets) => new AuditCursorCodec(secrets.apiKeyPepper),
      inject: [SECRETS],
    },
  ],
  exports: [AuditService],
})
export class AuditModule {}
