import { Controller, Delete, Get, Param, Patch, Post } from '@nestjs/common';
import { ApiCreatedResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { CurrentRequestContext, RequestContext } from '../audit/request-context';
import { AppError, ErrorCode } from '../common/errors';
import { ApiErrors } from '../common/openapi';
import { PageMetaView, PageQueryDto } from '../common/pagination';
import { UuidPipe, ValidBody, ValidQuery } from '../common/validation.pipe';
import { Authenticated, Caller } from '../identity/access.decorators';
import type { Principal } from '../identity/principal';
import {
  ChangeRoleDto,
  CreatedInvitationResponse,
  CreatedInvitationView,
  CreateInvitationDto,
  InvitationListResponse,
  InvitationResponse,
  InvitationView,
  MemberListResponse,
  MemberRemovalResponse,
  MemberResponse,
  MemberView,
} from './dto/member.dto';
import { MemberChangeBy, MembersService } from './members.service';

const changeBy = (principal: Principal, request: RequestContext): MemberChangeBy => ({
  actorUserId: principal.userId,
  actorApiKeyId: principal.credentialId ?? null,
  request,
});

/**
 * The organization's members and invitations, for its admins (docs/api.md#members): what the admin CLI does to members,
 * through the same service and rules (MembersService), rendered as JSON.
 */
@ApiTags('Members')
@Controller('v1/organization/members')
export class MembersController {
  constructor(private readonly members: MembersService) {}

  @Get()
  @Authenticated({ permissions: ['members:read'] })
  @ApiOperation({ summary: "List the organization's members by e-mail address: role, joined, last console sign-in" })
  @ApiOkResponse({ type: MemberListResponse })
  @ApiErrors(ErrorCode.INVALID_ARGUMENT)
  async list(@Caller() principal: Principal, @ValidQuery() query: PageQueryDto): Promise<MemberListResponse> {
    const page = await this.members.list(principal.organizationId, query.page, query.limit);
    return { members: page.items.map(MemberView.from), ...PageMetaView.of(page) };
  }

  @Patch(':id')
  @Authenticated({ permissions: ['members:write'] })
  @ApiOperation({
    summary: "Change a member's role; it applies to their next request",
    description:
      'Audited as member.role_changed (nothing when the role is the same). The last admin keeps the role (400 ' +
      "FAILED_PRECONDITION last_admin). A user who is not a member here, another organization's included, is 404.",
  })
  @ApiOkResponse({ type: MemberResponse })
  @ApiErrors(ErrorCode.INVALID_ARGUMENT, ErrorCode.FAILED_PRECONDITION, ErrorCode.NOT_FOUND)
  async changeRole(
    @Caller() principal: Principal,
    @Param('id', UuidPipe) id: string,
    @ValidBody() body: ChangeRoleDto,
    @CurrentRequestContext() request: RequestContext,
  ): Promise<MemberResponse> {
    const member = await this.members.changeRole(principal.organizationId, id, body.role, changeBy(principal, request));
    return { member: MemberView.from(member) };
  }

  @Delete(':id')
  @Authenticated({ permissions: ['members:write'] })
  @ApiOperation({
    summary: 'Remove a member: every key, workload identity and grant of theirs here is revoked, their sessions end',
    description:
      "As the admin CLI's remove-member: audited as member.removed after each revocation; single sign-on does not " +
      'add them back. The last admin stays (400 FAILED_PRECONDITION last_admin). A user who is not a member here is 404.',
  })
  @ApiOkResponse({ type: MemberRemovalResponse })
  @ApiErrors(ErrorCode.INVALID_ARGUMENT, ErrorCode.FAILED_PRECONDITION, ErrorCode.NOT_FOUND)
  async remove(
    @Caller() principal: Principal,
    @Param('id', UuidPipe) id: string,
    @CurrentRequestContext() request: RequestContext,
  ): Promise<MemberRemovalResponse> {
    const removal = await this.members.remove(principal.organizationId, id, changeBy(principal, request));
    if (removal.member === undefined) throw new AppError('member_not_found');
    return { member: MemberView.from(removal.member), revoked_keys: removal.revokedKeys };
  }

  @Get('invitations')
  @Authenticated({ permissions: ['members:read'] })
  @ApiOperation({ summary: "The organization's invitations neither used nor expired, newest first (never a link)" })
  @ApiOkResponse({ type: InvitationListResponse })
  async invitations(@Caller() principal: Principal): Promise<InvitationListResponse> {
    const pending = await this.members.pendingInvitations(principal.organizationId);
    return { invitations: pending.map(InvitationView.from) };
  }

  @Post('invitations')
  @Authenticated({ permissions: ['members:write'] })
  @ApiOperation({
    summary: 'Invite a person by e-mail address with a role: a one-time link, in this answer only',
    description:
      'The link works once, for 7 days: opened in a browser it makes the person a member with the role and signs ' +
      'them in to the console (POST /v1/console/invitations/accept). It replaces their pending invitation. A member ' +
      'already is 400 FAILED_PRECONDITION member_exists. Audited as member.invited.',
  })
  @ApiCreatedResponse({ type: CreatedInvitationResponse })
  @ApiErrors(ErrorCode.INVALID_ARGUMENT, ErrorCode.FAILED_PRECONDITION, ErrorCode.PAYLOAD_TOO_LARGE)
  async invite(
    @Caller() principal: Principal,
    @ValidBody() body: CreateInvitationDto,
    @CurrentRequestContext() request: RequestContext,
  ): Promise<CreatedInvitationResponse> {
    const created = await this.members.invite(
      principal.organizationId,
      body.email,
      body.role,
      changeBy(principal, request),
    );
    return { invitation: CreatedInvitationView.fromNew(created) };
  }

  @Delete('invitations/:id')
  @Authenticated({ permissions: ['members:write'] })
  @ApiOperation({
    summary: 'Withdraw an unused invitation: its link signs no one in',
    description: "Audited as member.invitation_revoked. A used, unknown or another organization's invitation is 404.",
  })
  @ApiOkResponse({ type: InvitationResponse })
  @ApiErrors(ErrorCode.INVALID_ARGUMENT, ErrorCode.NOT_FOUND)
  async revokeInvitation(
    @Caller() principal: Principal,
    @Param('id', UuidPipe) id: string,
    @CurrentRequestContext() request: RequestContext,
  ): Promise<InvitationResponse> {
    const revoked = await this.members.revokeInvitation(principal.organizationId, id, changeBy(principal, request));
    return { invitation: InvitationView.from(revoked) };
  }
}
