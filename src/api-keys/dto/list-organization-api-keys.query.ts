import { ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsOptional, IsUUID } from 'class-validator';
import { ListApiKeysQuery } from './list-api-keys.query';

/** GET /v1/organization/api-keys: the user's list query, and `user_id` (docs/api.md#get-v1organizationapi-keys). */
export class ListOrganizationApiKeysQuery extends ListApiKeysQuery {
  @ApiPropertyOptional({ format: 'uuid', description: "Only this user's keys (in the caller's organization)" })
  @IsOptional()
  @IsUUID('all')
  // Ids are compared in lower case, as path ids are (docs/api.md#conventions); a repeated parameter
  // (an array) stays as it is and fails @IsUUID.
  @Transform(({ value }: { value: unknown }) => (typeof value === 'string' ? value.toLowerCase() : value))
  user_id?: string;
}
