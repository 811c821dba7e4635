import { Controller, Get, Header, Inject } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { Public } from '../identity/access.decorators';
import { AppError, ErrorCode, Messages } from '../common/errors';
import { ApiErrors } from '../common/openapi';
import { LIVE_BODY, PROBES, Probes, ReadyBody } from '../common/probes';

const NO_CACHE = 'no-cache, no-store, must-revalidate';

/** Probes (docs/deployment.md#probes); the metrics listener answers the same two paths. */
@Public()
@ApiTags('Operations')
@Controller()
export class HealthController {
  constructor(@Inject(PROBES) private readonly probes: Probes) {}

  @Get('healthz')
  @Header('Cache-Control', NO_CACHE)
  @ApiOperation({ summary: 'Liveness: the process is alive and serving (no database)' })
  @ApiOkResponse({ schema: { type: 'object', properties: { status: { type: 'string', example: 'ok' } } } })
  liveness(): typeof LIVE_BODY {
    return LIVE_BODY;
  }

  @Get('readyz')
  @Header('Cache-Control', NO_CACHE)
  @ApiOperation({
    summary:
      'Readiness: not draining, the database answers within 1 s, every migration applied, the signing keys loaded',
  })
  @ApiOkResponse({ description: "{ status: 'ok', info, error, details } with database, migrations, signing_keys" })
  @ApiErrors(ErrorCode.UNAVAILABLE)
  async readiness(): Promise<ReadyBody> {
    const ready = await this.probes.readiness();
    if (ready === undefined) throw new AppError(ErrorCode.UNAVAILABLE, Messages.unavailable, { reason: 'not_ready' });
    return ready;
  }
}
