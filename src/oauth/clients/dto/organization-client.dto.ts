import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { ArrayMaxSize, IsArray, IsBoolean, IsOptional, IsString, MaxLength } from 'class-validator';
import { MAX_REDIRECT_URI_LENGTH, MAX_REDIRECT_URIS } from '../client-registration';
import type { RegisteredClient } from '../registered-client.entity';

/**
 * POST /v1/organization/oauth-clients (docs/mcp.md#clients). Types and sizes here; what a redirect URI may be is
 * checked by the service, which says what is wrong.
 */
export class CreateOrganizationClientDto {
  @ApiProperty({ minLength: 1, maxLength: 255, example: 'Support desk assistant' })
  @IsString()
  @MaxLength(255)
  name: string;

  @ApiProperty({
    type: [String],
    minItems: 1,
    maxItems: MAX_REDIRECT_URIS,
    example: ['https://assistant.example.com/oauth/callback'],
    description: 'https, or http on a loopback host (RFC 8252: its port may differ at the request); no fragment',
  })
  @IsArray()
  @ArrayMaxSize(MAX_REDIRECT_URIS)
  @IsString({ each: true })
  @MaxLength(MAX_REDIRECT_URI_LENGTH, { each: true })
  redirect_uris: string[];

  @ApiPropertyOptional({
    default: false,
    description: 'A confidential client: it gets a client_secret (shown once) and must send it to the token endpoint',
  })
  @IsOptional()
  @IsBoolean()
  confidential?: boolean;
}

/** A registered client as the API shows it: never its secret. */
export class OAuthClientView {
  @ApiProperty({ format: 'uuid', description: 'Its client_id' })
  client_id: string;
  @ApiProperty({ enum: ['organization', 'dynamic'] })
  registration: 'organization' | 'dynamic';
  @ApiProperty()
  name: string;
  @ApiProperty({ type: [String] })
  redirect_uris: string[];
  @ApiProperty({ description: 'It has a client_secret (only its hash is kept)' })
  confidential: boolean;
  @ApiProperty({ type: String, format: 'uuid', nullable: true, description: 'The admin who registered it' })
  created_by: string | null;
  @ApiProperty({ format: 'date-time' })
  created_at: string;
  @ApiProperty({ type: String, format: 'date-time', nullable: true, description: 'Its last use, to the hour' })
  last_used_at: string | null;

  static from(client: RegisteredClient): OAuthClientView {
    return {
      client_id: client.id,
      registration: client.kind,
      name: client.name,
      redirect_uris: client.redirectUris,
      confidential: client.secretHash !== null,
      created_by: client.createdBy,
      created_at: client.createdAt.toISOString(),
      last_used_at: client.lastUsedAt?.toISOString() ?? null,
    };
  }
}

export class OAuthClientListResponse {
  @ApiProperty({ type: [OAuthClientView] })
  oauth_clients: OAuthClientView[];
}

export class OAuthClientResponse {
  @ApiProperty({ type: OAuthClientView })
  oauth_client: OAuthClientView;
}

export class OAuthClientCreatedResponse extends OAuthClientResponse {
  @ApiProperty({
    type: String,
    nullable: true,
    description: "A confidential client's secret (gh_cs_…), shown this once; null for a public client",
  })
  client_secret: string | null;
}
