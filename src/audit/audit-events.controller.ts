import { Controller, Get, Query } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { ApiErrors } from '../common/openapi';
import { CurrentPrincipal, RequirePermissions } from '../identity/access.decorators';
import { IdentityService } from '../identity/identity.service';
import type { Principal } from '../identity/principal';
import { AuditService } from './audit.service';
import { AuditEventListResponse, AuditEventView } from './dto/audit-event.view';
import { ListAuditEventsQuery } from './dto/list-audit-events.query';
import { parseInstant } from './instants';

@ApiTags('Audit events')
@Controller('v1/audit-events')
export class AuditEventsController {
  constructor(
    private readonly audit: AuditService,
    private readonly identity: IdentityService,
  ) {}

  @Get()
  @RequirePermissions('audit:read')
  @ApiOperation({ summary: "The caller's organization's audit events, newest first, a page at a time" })
  @ApiOkResponse({ type: AuditEventListResponse })
  @ApiErrors(400)
  async list(
    @CurrentPrincipal() principal: Principal,
    @Query() query: ListAuditEventsQuery,
  ): Promise<AuditEventListResponse> {
    const page = await this.audit.page(
      principal.organizationId,
      {
        action: query.action,
        actorUserId: query.actor_user_id,
        targetId: query.target_id,
        // Both already validated as instants by the query DTO.
        since: query.since === undefined ? undefined : (parseInstant(query.since) ?? undefined),
        until: query.until === undefined ? undefined : (parseInstant(query.until) ?? undefined),
      },
      query.limit,
      query.cursor,
    );
    // The people beside their ids: the actors, and the users some events are about (one query a page).
    const emails = await this.identity.emailsOf(
      page.events.flatMap((event) => [
        ...(event.actorUserId === null ? [] : [event.actorUserId]),
        ...(event.targetType === 'user' && event.targetId !== null ? [event.targetId] : []),
      ]),
    );
    return {
      audit_events: page.events.map((event) => AuditEventView.from(event, emails)),
      next_cursor: page.nextCursor,
    };
  }
}
