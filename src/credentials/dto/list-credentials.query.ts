import { ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsBoolean, IsOptional, IsString, IsUUID, Matches, MaxLength } from 'class-validator';
import { PageQueryDto, toBoolean } from '../../common/pagination';

/** The owner's list of one kind: a page, revoked ones on request. */
export class ListCredentialsQuery extends PageQueryDto {
  @ApiPropertyOptional({ type: Boolean, default: false, description: 'Include revoked ones' })
  @IsOptional()
  @Transform(toBoolean)
  @IsBoolean()
  include_revoked: boolean = false;
}

/** The organization's list of one kind (docs/api.md#get-v1organizationapi-keys): the owner's query and its owner. */
export class ListOrganizationCredentialsQuery extends ListCredentialsQuery {
  @ApiPropertyOptional({ format: 'uuid', description: "Only this user's (in the caller's organization)" })
  @IsOptional()
  @IsUUID('all')
  // Ids are compared in lower case, as path ids are (docs/api.md#conventions); a repeated parameter
  // (an array) stays as it is and fails @IsUUID.
  @Transform(({ value }: { value: unknown }) => (typeof value === 'string' ? value.toLowerCase() : value))
  user_id?: string;

  @ApiPropertyOptional({
    maxLength: 320,
    description:
      'Only those of the user with this e-mail address (any case); with user_id, both must name the same user',
    example: 'dev@acme.test',
  })
  @IsOptional()
  @IsString()
  @MaxLength(320)
  @Matches(/^[^\s@]+@[^\s@]+$/)
  email?: string;
}
