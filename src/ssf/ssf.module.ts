import { Module } from '@nestjs/common';
import { AUDIT_OBSERVER } from '../audit/observer';
import { AuthModule } from '../auth/auth.module';
import { ResourceServersModule } from '../resource-servers/resource-servers.module';
import { SsfOutbox } from './outbox';
import { SetSigner } from './set-signer';
import { SsfController } from './ssf.controller';
import { SsfRepository } from './ssf.repository';
import { SsfRetention } from './ssf-retention';
import { WakeSignal } from './wake-signal';

/** The revocation feed (docs/revocation-feed.md): the outbox that audit entries feed, and its poll delivery. */
@Module({
  imports: [AuthModule, ResourceServersModule],
  controllers: [SsfController],
  providers: [
    SsfRepository,
    WakeSignal,
    SsfOutbox,
    SetSigner,
    SsfRetention,
    // AuditService tells the outbox of every entry inside the entry's transaction.
    { provide: AUDIT_OBSERVER, useExisting: SsfOutbox },
  ],
})
export class SsfModule {}
