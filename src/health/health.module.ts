import { Global, Module } from '@nestjs/common';
import { AuthModule } from '../auth/auth.module';
import { PROBES } from '../common/probes';
import { ShutdownState } from '../common/shutdown.state';
import { HealthController } from './health.controller';
import { Readiness } from './readiness';

/** Global: the HTTP gate and anything that stops work at shutdown read the draining state; the metrics listener asks PROBES. */
@Global()
@Module({
  imports: [AuthModule],
  controllers: [HealthController],
  providers: [ShutdownState, Readiness, { provide: PROBES, useExisting: Readiness }],
  exports: [ShutdownState, PROBES],
})
export class HealthModule {}
