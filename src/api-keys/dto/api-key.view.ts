import { ApiProperty } from '@nestjs/swagger';
import { PageMetaView } from '../../common/pagination';
import type { ApiKey, ApiKeyStatus } from '../api-key.entity';

/** docs/api.md#api-key-object, without the secret. */
export class ApiKeyView {
  @ApiProperty({ format: 'uuid' })
  id: string;
  @ApiProperty({ format: 'uuid' })
  organization_id: string;
  @ApiProperty({ format: 'uuid' })
  user_id: string;
  @ApiProperty({ description: '"" when none was given' })
  label: string;
  @ApiProperty({ enum: ['ACTIVE', 'REVOKED'] })
  status: ApiKeyStatus;
  @ApiProperty({ format: 'date-time' })
  created_at: string;
  @ApiProperty({ format: 'date-time' })
  updated_at: string;
  @ApiProperty({ format: 'date-time', nullable: true, type: String })
  last_used_at: string | null;

  static from(key: ApiKey): ApiKeyView {
    return {
      id: key.id,
      organization_id: key.organizationId,
      user_id: key.userId,
      label: key.label,
      status: key.status,
      created_at: key.createdAt.toISOString(),
      updated_at: key.updatedAt.toISOString(),
      last_used_at: key.lastUsedAt === null ? null : key.lastUsedAt.toISOString(),
    };
  }
}

/** The creation record: the only one that carries `value`. */
export class CreatedApiKeyView extends ApiKeyView {
  @ApiProperty({ description: 'The secret key value: returned once, at creation' })
  value: string;
}

export class CreateApiKeyResponse {
  @ApiProperty({ type: () => CreatedApiKeyView })
  api_key: CreatedApiKeyView;
  @ApiProperty({ description: 'The secret key value again (same as api_key.value)' })
  opaque_key: string;
}

export class ApiKeyResponse {
  @ApiProperty({ type: () => ApiKeyView })
  api_key: ApiKeyView;
}

export class ApiKeyListResponse extends PageMetaView {
  @ApiProperty({ type: () => [ApiKeyView] })
  api_keys: ApiKeyView[];
}
