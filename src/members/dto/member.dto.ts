import { ApiProperty } from '@nestjs/swagger';
import { IsIn, IsString, MaxLength } from 'class-validator';
import { PageMetaView } from '../../common/pagination';
import type { MemberRow } from '../../identity/identity.repository';
import { MAX_EMAIL_LENGTH } from '../../identity/identity.service';
import { type Role, ROLES } from '../../identity/roles';
import type { NewInvitation, PendingInvitation } from '../members.service';

/** A member of the organization (docs/api.md#members). */
export class MemberView {
  @ApiProperty({ format: 'uuid' })
  user_id: string;
  @ApiProperty({ example: 'dev@acme.test' })
  email: string;
  @ApiProperty({ enum: ROLES })
  role: Role;
  @ApiProperty({ format: 'date-time', description: 'When the membership began' })
  joined_at: string;
  @ApiProperty({
    type: String,
    format: 'date-time',
    nullable: true,
    description: 'The last console sign-in; null when none is known',
  })
  last_signed_in_at: string | null;

  static from(member: MemberRow): MemberView {
    return {
      user_id: member.userId,
      email: member.email,
      role: member.role,
      joined_at: member.joinedAt.toISOString(),
      last_signed_in_at: member.lastSignedInAt?.toISOString() ?? null,
    };
  }
}

export class MemberListResponse extends PageMetaView {
  @ApiProperty({ type: [MemberView] })
  members: MemberView[];
}

export class MemberResponse {
  @ApiProperty({ type: MemberView })
  member: MemberView;
}

export class MemberRemovalResponse {
  @ApiProperty({ type: MemberView, description: 'The member as they were' })
  member: MemberView;
  @ApiProperty({ type: 'integer', description: 'How many of their keys the removal revoked' })
  revoked_keys: number;
}

/** PATCH /v1/organization/members/{id}. */
export class ChangeRoleDto {
  @ApiProperty({ enum: ROLES })
  @IsIn(ROLES)
  role: Role;
}

/** POST /v1/organization/members/invitations. */
export class CreateInvitationDto {
  @ApiProperty({ maxLength: MAX_EMAIL_LENGTH, example: 'new.colleague@acme.test' })
  @IsString()
  @MaxLength(MAX_EMAIL_LENGTH)
  email: string;

  @ApiProperty({ enum: ROLES, description: 'The role the person gets when they accept' })
  @IsIn(ROLES)
  role: Role;
}

/** A pending invitation (never its code). */
export class InvitationView {
  @ApiProperty({ format: 'uuid' })
  id: string;
  @ApiProperty({ example: 'new.colleague@acme.test' })
  email: string;
  @ApiProperty({ enum: ROLES })
  role: Role;
  @ApiProperty({ type: String, format: 'uuid', nullable: true, description: 'The admin who invited' })
  invited_by_user_id: string | null;
  @ApiProperty({ format: 'date-time' })
  created_at: string;
  @ApiProperty({ format: 'date-time', description: 'The link works until then (7 days), once' })
  expires_at: string;

  static from({ invitation, email }: PendingInvitation): InvitationView {
    return {
      id: invitation.id,
      email,
      role: invitation.role,
      invited_by_user_id: invitation.invitedByUserId,
      created_at: invitation.createdAt.toISOString(),
      expires_at: invitation.expiresAt.toISOString(),
    };
  }
}

export class CreatedInvitationView extends InvitationView {
  @ApiProperty({
    example: 'https://gatehouse.example.com/console/sign-in#invitation=q8Cq2rR6qjWvV9S0Wm3xYQ2fC7hX1k1oE0rTzq0l5aY',
    description: 'The one-time link to give the person: in this answer only, and never again',
  })
  url: string;

  static fromNew(created: NewInvitation): CreatedInvitationView {
    return { ...InvitationView.from(created), url: created.url };
  }
}

export class CreatedInvitationResponse {
  @ApiProperty({ type: CreatedInvitationView })
  invitation: CreatedInvitationView;
}

export class InvitationResponse {
  @ApiProperty({ type: InvitationView })
  invitation: InvitationView;
}

export class InvitationListResponse {
  @ApiProperty({ type: [InvitationView] })
  invitations: InvitationView[];
}
