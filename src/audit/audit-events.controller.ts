import { Controller, Get, Inject, Query } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { ApiErrors } from '../common/openapi';
import { ErrorCode } from '../common/errors';
import { Authenticated, Caller } from '../identity/access.decorators';
import { IdentityService } from '../identity/identity.service';
import type { Principal } from '../identity/principal';
import { AuditService } from './audit.service';
import { AuditEventListResponse, AuditEventView } from './dto/audit-event.view';
import { ListAuditEventsQuery } from './dto/list-audit-events.query';
import { parseInstant } from './instants';
import { AUDIT_TARGET_LABELS, AuditTargetLabels } from './target-labels';

/** The nil UUID: never a user's id (users get random v4 UUIDs). */
const NO_USER = '00000000-0000-0000-0000-000000000000';

@ApiTags('Audit events')
@Controller('v1/audit-events')
export class AuditEventsController {
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
  private async actorUserId(query: ListAuditEventsQuery): Promise<string | undefined> {
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
  async list(@Caller() principal: Principal, @Query() query: ListAuditEventsQuery): Promise<AuditEventListResponse> {
    const page = await this.audit.page(
      principal.organizationId,
      {
        action: query.action,
        actorUserId: await this.actorUserId(query),
        targetId: query.target_id,
        // Both already validated as instants by the query DTO.
        since: query.since === undefined ? undefined : (parseInstant(query.since) ?? undefined),
        until: query.until === undefined ? undefined : (parseInstant(query.until) ?? undefined),
      },
      query.limit,
      query.cursor,
    );
    // Names beside the ids: the actors' and user targets' e-mails, the key targets' labels (one query each a page).
    const emails = await this.identity.emailsOf(
      page.events.flatMap((event) => [
        ...(event.actorUserId === null ? [] : [event.actorUserId]),
        ...(event.targetType === 'user' && event.targetId !== null ? [event.targetId] : []),
      ]),
    );
    const keyIds = [
      ...new Set(
        page.events.flatMap((event) =>
          event.targetType === 'api_key' && event.targetId !== null ? [event.targetId] : [],
        ),
      ),
    ];
    const labels = await this.targetLabels.labels(principal.organizationId, keyIds);
    return {
      audit_events: page.events.map((event) => AuditEventView.from(event, emails, labels)),
      next_cursor: page.nextCursor,
    };
  }
}
