import { ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsOptional, IsString, IsUUID, Matches, MaxLength } from 'class-validator';
import { ListApiKeysQuery } from '../../dto/list-api-keys.query';

/** GET /v1/organization/api-keys: the user's list query, and `user_id` (docs/api.md#get-v1organizationapi-keys). */
export class ListOrganizationApiKeysQuery extends ListApiKeysQuery {
  @ApiPropertyOptional({ format: 'uuid', description: "Only this user's keys (in the caller's organization)" })
  @IsOptional()
  @IsUUID('all')
  // Ids are compared in lower case, as path ids are (docs/api.md#conventions); a repeated parameter
  // (an array) stays as it is and fails @IsUUID.
  @Transform(({ value }: { value: unknown }) => (typeof value === 'string' ? value.toLowerCase() : value))
  user_id?: string;

  @ApiPropertyOptional({
    maxLength: 320,
    description:
      'Only the keys of the user with this e-mail address (any case); with user_id, both must name the same user',
    example: 'dev@acme.test',
  })
  @IsOptional()
  @IsString()
  @MaxLength(320)
  @Matches(/^[^\s@]+@[^\s@]+$/)
  email?: string;
}
