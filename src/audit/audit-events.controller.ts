import { Controller, Get, Inject, Logger, Res } from '@nestjs/common';
import { ValidQuery } from '../common/validation.pipe';
import { ApiExtraModels, ApiOkResponse, ApiOperation, ApiProduces, ApiTags, getSchemaPath } from '@nestjs/swagger';
import type { Response } from 'express';
import { ApiErrors } from '../common/openapi';
import { AppError, ErrorCode } from '../common/errors';
import { Authenticated, Caller } from '../identity/access.decorators';
import { IdentityService } from '../identity/identity.service';
import type { Principal } from '../identity/principal';
import { AuditService } from './audit.service';
import type { AuditEvent } from './audit-event.entity';
import { AUDIT_EXPORT_BATCH, csvHeader, csvRow, exportFileName, MAX_AUDIT_EXPORT_DAYS } from './audit-export';
import type { AuditEventFilters } from './audit.repository';
import { AuditChangeView, AuditEventListResponse, AuditEventView } from './dto/audit-event.view';
import { AuditEventFiltersQuery, ExportAuditEventsQuery, ListAuditEventsQuery } from './dto/list-audit-events.query';
import { microsOf, parseInstant } from './instants';
import { AUDIT_TARGET_LABELS, AuditTargetLabels } from './target-labels';

/** The nil UUID: never a user's id (users get random v4 UUIDs). */
const NO_USER = '00000000-0000-0000-0000-000000000000';
const DAY_MICROS = 86_400_000_000;

/** Writes a chunk, and waits while the client reads slower than the export is written (or until it has gone). */
function write(response: Response, chunk: string): Promise<void> {
  if (response.write(chunk)) return Promise.resolve();
  return new Promise((resolve) => {
    const done = (): void => {
      response.off('drain', done);
      response.off('close', done);
      resolve();
    };
    response.on('drain', done);
    response.on('close', done);
  });
}

@ApiTags('Audit events')
@ApiExtraModels(AuditChangeView)
@Controller('v1/audit-events')
export class AuditEventsController {
  private readonly logger = new Logger(AuditEventsController.name);

  constructor(
    private readonly audit: AuditService,
    private readonly identity: IdentityService,
    // A port that api-keys provides (key labels; docs/architecture.md#ports).
    @Inject(AUDIT_TARGET_LABELS) private readonly targetLabels: AuditTargetLabels,
  ) {}

  /**
   * actor_user_id, or the user actor_email names (as the organization key list's email). Nobody by that address, or
   * another user than actor_user_id: an id no user has, so no event matches and a cursor is still checked.
   */
  private async actorUserId(query: AuditEventFiltersQuery): Promise<string | undefined> {
    if (query.actor_email === undefined) return query.actor_user_id;
    const byEmail = await this.identity.userIdByEmail(query.actor_email);
    if (byEmail === null || (query.actor_user_id !== undefined && query.actor_user_id !== byEmail)) return NO_USER;
    return byEmail;
  }

  @Get()
  @Authenticated({ permissions: ['audit:read'] })
  @ApiOperation({ summary: "The caller's organization's audit events, newest first, a page at a time" })
  @ApiOkResponse({ type: AuditEventListResponse })
  @ApiErrors(ErrorCode.INVALID_ARGUMENT)
  async list(
    @Caller() principal: Principal,
    @ValidQuery() query: ListAuditEventsQuery,
  ): Promise<AuditEventListResponse> {
    const page = await this.audit.page(principal.organizationId, await this.filters(query), query.limit, query.cursor);
    return {
      audit_events: await this.views(principal.organizationId, page.events),
      next_cursor: page.nextCursor,
    };
  }

  @Get('export')
  @Authenticated({ permissions: ['audit:read'] })
  @ApiOperation({
    summary: 'Every event of a range that matches the filters, as a CSV or JSON download, newest first',
    description:
      `The list's filters; until defaults to now, since to ${MAX_AUDIT_EXPORT_DAYS} days before until, and the range ` +
      `may be at most ${MAX_AUDIT_EXPORT_DAYS} days long (400 audit_export_range_too_long). Streamed: a failure ` +
      'after the first bytes cuts the download short (the transfer does not complete). A CSV cell that a ' +
      "spreadsheet would read as a formula (=, +, -, @ first) starts with ' and is quoted.",
  })
  @ApiProduces('text/csv', 'application/json')
  @ApiOkResponse({
    description: 'An attachment: text/csv (a header line, then one line per event) or application/json (an array)',
    content: {
      'text/csv': { schema: { type: 'string' } },
      'application/json': { schema: { type: 'array', items: { $ref: getSchemaPath(AuditEventView) } } },
    },
  })
  @ApiErrors(ErrorCode.INVALID_ARGUMENT)
  async export(
    @Caller() principal: Principal,
    @ValidQuery() query: ExportAuditEventsQuery,
    @Res() response: Response,
  ): Promise<void> {
    const organizationId = principal.organizationId;
    const filters = await this.filters(query);
    const until = filters.until ?? microsOf(new Date());
    const since = filters.since ?? until - MAX_AUDIT_EXPORT_DAYS * DAY_MICROS;
    if (until - since > MAX_AUDIT_EXPORT_DAYS * DAY_MICROS) throw new AppError('audit_export_range_too_long');
    const batches = this.audit.batches(organizationId, { ...filters, since, until }, AUDIT_EXPORT_BATCH);
    // The first batch before any byte is sent: a failure now is an error answer, not a cut download.
    let next = await batches.next();
    const csv = query.format === 'csv';
    const name = exportFileName(new Date(since / 1000), new Date(until / 1000), query.format);
    response.status(200);
    response.setHeader('Content-Type', csv ? 'text/csv; charset=utf-8' : 'application/json; charset=utf-8');
    response.setHeader('Content-Disposition', `attachment; filename="${name}"`);
    response.setHeader('Cache-Control', 'no-store');
    let gone = false;
    response.on('close', () => (gone = true));
    let count = 0;
    try {
      await write(response, csv ? csvHeader() : '[');
      while (next.done !== true && !gone) {
        const views = await this.views(organizationId, next.value);
        const text = csv
          ? views.map(csvRow).join('')
          : views.map((view, i) => `${count + i === 0 ? '' : ','}\n${JSON.stringify(view)}`).join('');
        count += views.length;
        await write(response, text);
        next = await batches.next();
      }
      if (gone) {
        await batches.return(undefined);
        return;
      }
      response.end(csv ? '' : count === 0 ? ']' : '\n]\n');
    } catch (error) {
      // Headers are sent: the client must not take a partial export for a whole one. The connection is cut.
      this.logger.warn(
        { err: error, events: count },
        'audit export failed after it started; the download is cut short',
      );
      response.destroy(error instanceof Error ? error : undefined);
    }
  }

  /** The query's filters: instants as microseconds, an actor's e-mail as their id. */
  private async filters(query: AuditEventFiltersQuery): Promise<AuditEventFilters> {
    return {
      action: query.action,
      actorUserId: await this.actorUserId(query),
      targetId: query.target_id,
      // Both already validated as instants by the query DTO.
      since: query.since === undefined ? undefined : (parseInstant(query.since) ?? undefined),
      until: query.until === undefined ? undefined : (parseInstant(query.until) ?? undefined),
    };
  }

  /** Events as the API shows them: the actors' and user targets' e-mails, the key targets' labels (one query each). */
  private async views(organizationId: string, events: readonly AuditEvent[]): Promise<AuditEventView[]> {
    const emails = await this.identity.emailsOf(
      events.flatMap((event) => [
        ...(event.actorUserId === null ? [] : [event.actorUserId]),
        ...(event.targetType === 'user' && event.targetId !== null ? [event.targetId] : []),
      ]),
    );
    const keyIds = [
      ...new Set(
        events.flatMap((event) => (event.targetType === 'api_key' && event.targetId !== null ? [event.targetId] : [])),
      ),
    ];
    const labels = await this.targetLabels.labels(organizationId, keyIds);
    return events.map((event) => AuditEventView.from(event, emails, labels));
  }
}
