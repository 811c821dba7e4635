import { Global, Module } from '@nestjs/common';
import { AUDIT_OBSERVER } from '../audit/observer';
import { AuthModule } from '../auth/auth.module';
import { ResourceServersModule } from '../resource-servers/resource-servers.module';
import { SsfOutbox } from './outbox';
import { PollHub } from './poll-hub';
import { SetSigner } from './set-signer';
import { SsfController } from './ssf.controller';
import { SsfRepository } from './ssf.repository';
import { SsfPollService } from './ssf-poll.service';
import { SsfRetention } from './ssf-retention';
import { SsfStreamsRepository } from './ssf-streams.repository';
import { SsfStreamsService } from './ssf-streams.service';
import { WakeSignal } from './wake-signal';
import { SsfEvent } from './ssf-event.entity';
import { SsfDelivery } from './ssf-event.entity';
import { SsfStream } from './ssf-stream.entity';
import { EntitiesModule } from '../database/entities.module';

/**
 * The revocation feed (docs/revocation-feed.md): the outbox that audit entries feed, the streams, and their poll
 * delivery through this instance's poll hub.
 */
@Module({
  imports: [EntitiesModule.forFeature([SsfEvent, SsfDelivery, SsfStream]), AuthModule, ResourceServersModule],
  controllers: [SsfController],
  providers: [
    SsfRepository,
    SsfStreamsRepository,
    WakeSignal,
    PollHub,
    SsfOutbox,
    SetSigner,
    SsfStreamsService,
    SsfPollService,
    SsfRetention,
  ],
  // For SsfPortsModule only.
  exports: [SsfOutbox],
})
export class SsfModule {}

/**
 * The port ssf provides to audit: AuditService tells the outbox of every entry inside the entry's transaction.
 * Global, with that one token exported, so that audit injects it without importing ssf (docs/architecture.md#ports).
 */
@Global()
@Module({
  imports: [SsfModule],
  providers: [{ provide: AUDIT_OBSERVER, useExisting: SsfOutbox }],
  exports: [AUDIT_OBSERVER],
})
export class SsfPortsModule {}
