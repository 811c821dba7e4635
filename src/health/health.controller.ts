import { Controller, Get, Header } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { HealthCheckResult, HealthCheckService, TypeOrmHealthIndicator } from '@nestjs/terminus';
import { Public } from '../identity/access.decorators';
import { AppError, ErrorCode } from '../common/errors';
import { ApiErrors } from '../common/openapi';
import { ShutdownState } from '../common/shutdown.state';

/** A readiness probe never hangs: a database that does not answer within this is "not ready". */
export const READINESS_TIMEOUT_MS = 1000;

const NO_CACHE = 'no-cache, no-store, must-revalidate';

/** Probes (docs/operations.md). */
@Public()
@ApiTags('Operations')
@Controller()
export class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly database: TypeOrmHealthIndicator,
    private readonly shutdown: ShutdownState,
  ) {}

  // Terminus' @HealthCheck() would document its own 503 body; ours is the `{code, message}` of every error.
  @Get('healthz')
  @Header('Cache-Control', NO_CACHE)
  @ApiOperation({ summary: 'Liveness: the process is alive and serving (no database)' })
  @ApiOkResponse({ schema: { type: 'object', properties: { status: { type: 'string', example: 'ok' } } } })
  liveness(): { status: 'ok' } {
    return { status: 'ok' };
  }

  /** Success body is terminus' own result: `{ status: "ok", info, error, details }`. */
  @Get('readyz')
  @Header('Cache-Control', NO_CACHE)
  @ApiOperation({ summary: 'Readiness: the database answers within 1 s and the instance is not draining' })
  @ApiOkResponse({ description: "terminus' result: { status: 'ok', info, error, details }" })
  @ApiErrors(ErrorCode.UNAVAILABLE)
  readiness(): Promise<HealthCheckResult> {
    if (this.shutdown.isDraining) throw new AppError('shutting_down');
    return this.health.check([() => this.database.pingCheck('database', { timeout: READINESS_TIMEOUT_MS })]);
  }
}
