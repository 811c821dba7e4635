import { ApiProperty } from '@nestjs/swagger';
import { IsString } from 'class-validator';
import { PERMISSIONS, ROLES } from '../../identity/roles';
import type { ConsoleSession } from '../console-sign-in.service';

/** Body of POST /v1/console/sessions: the code from the sign-in link's fragment. */
export class CreateConsoleSessionDto {
  @ApiProperty({
    description: 'The `code` of the sign-in link (`…/console/sign-in#code=<code>`): 43 characters of base64url',
    example: 'q8Cq2rR6qjWvV9S0Wm3xYQ2fC7hX1k1oE0rTzq0l5aY',
  })
  @IsString()
  code: string;
}

/** Body of POST /v1/console/invitations/accept: the code from the invitation's link. */
export class AcceptInvitationDto {
  @ApiProperty({
    description: 'The `invitation` of the link (`…/console/sign-in#invitation=<code>`): 43 characters of base64url',
    example: 'q8Cq2rR6qjWvV9S0Wm3xYQ2fC7hX1k1oE0rTzq0l5aY',
  })
  @IsString()
  code: string;
}

export class ConsoleOrganizationView {
  @ApiProperty({ format: 'uuid' })
  id: string;
  @ApiProperty()
  name: string;
}

/** docs/api.md#post-v1consolesessions */
export class ConsoleSessionResponse {
  @ApiProperty({ description: 'A session token (JWT) to send as `Authorization: Bearer <token>`' })
  session_token: string;
  @ApiProperty({ enum: ['Bearer'] })
  token_type: 'Bearer';
  @ApiProperty({ type: 'integer', description: 'Lifetime of the session token in seconds (3600)' })
  expires_in: number;
  @ApiProperty({ format: 'uuid' })
  user_id: string;
  @ApiProperty({ description: "The member's e-mail address: who is signed in", example: 'dev@acme.test' })
  email: string;
  @ApiProperty({ type: ConsoleOrganizationView })
  organization: ConsoleOrganizationView;
  @ApiProperty({ enum: ROLES })
  role: string;
  @ApiProperty({
    enum: PERMISSIONS,
    isArray: true,
    description: "The role's permissions when signing in, in catalogue order (what the console offers)",
  })
  permissions: string[];

  static from(session: ConsoleSession): ConsoleSessionResponse {
    return {
      session_token: session.sessionToken,
      token_type: 'Bearer',
      expires_in: session.expiresIn,
      user_id: session.userId,
      email: session.email,
      organization: session.organization,
      role: session.role,
      permissions: session.permissions,
    };
  }
}
