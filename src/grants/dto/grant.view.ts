import { ApiProperty } from '@nestjs/swagger';
import type { Grant } from '../grants.repository';

/** One grant as the API shows it (docs/mcp.md#grants). */
export class GrantView {
  @ApiProperty({ format: 'uuid' })
  id: string;
  @ApiProperty({ description: 'The OAuth client: its metadata document URL, or its registered id' })
  client_id: string;
  @ApiProperty({ description: 'The name the client gave itself (untrusted text: show client_id beside it)' })
  client_name: string;
  @ApiProperty({ description: "The resource server's audience" })
  resource: string;
  @ApiProperty({ type: [String], example: ['tools:read'] })
  scopes: string[];
  @ApiProperty({ enum: ['active', 'revoked'] })
  status: string;
  @ApiProperty({ format: 'uuid', description: 'The person who consented' })
  user_id: string;
  @ApiProperty({ format: 'date-time' })
  created_at: string;
  @ApiProperty({
    type: String,
    format: 'date-time',
    nullable: true,
    description: 'Its last code or refresh, to the minute',
  })
  last_used_at: string | null;

  static from(grant: Grant): GrantView {
    return {
      id: grant.id,
      client_id: grant.clientId,
      client_name: grant.clientName,
      resource: grant.resource,
      scopes: grant.scope === '' ? [] : grant.scope.split(' '),
      status: grant.status,
      user_id: grant.userId,
      created_at: grant.createdAt.toISOString(),
      last_used_at: grant.lastUsedAt?.toISOString() ?? null,
    };
  }
}

export class GrantListResponse {
  @ApiProperty({ type: [GrantView] })
  grants: GrantView[];
}

export class GrantResponse {
  @ApiProperty({ type: GrantView })
  grant: GrantView;
}
