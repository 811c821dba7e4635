import { Global, Module } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { ShutdownState } from '../common/shutdown.state';
import { HealthController } from './health.controller';

/**
 * GET /healthz and GET /readyz, and the instance's draining state (global: the HTTP gate and anything that must stop
 * taking work at shutdown read it).
 */
@Global()
@Module({
  imports: [TerminusModule.forRoot({ logger: false })],
  controllers: [HealthController],
  providers: [ShutdownState],
  exports: [ShutdownState],
})
export class HealthModule {}
