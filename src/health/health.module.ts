import { Global, Module } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { ShutdownState } from '../common/shutdown.state';
import { HealthController } from './health.controller';

/** Global: the HTTP gate and anything that stops work at shutdown read the draining state. */
@Global()
@Module({
  imports: [TerminusModule.forRoot({ logger: false })],
  controllers: [HealthController],
  providers: [ShutdownState],
  exports: [ShutdownState],
})
export class HealthModule {}
