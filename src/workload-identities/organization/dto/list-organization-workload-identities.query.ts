import { ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsOptional, IsString, IsUUID, Matches, MaxLength } from 'class-validator';
import { ListWorkloadIdentitiesQuery } from '../../dto/list-workload-identities.query';

/** GET /v1/organization/workload-identities: the user's list query, and the owner filters of the organization's keys. */
export class ListOrganizationWorkloadIdentitiesQuery extends ListWorkloadIdentitiesQuery {
  @ApiPropertyOptional({ format: 'uuid', description: "Only this user's identities (in the caller's organization)" })
  @IsOptional()
  @IsUUID('all')
  @Transform(({ value }: { value: unknown }) => (typeof value === 'string' ? value.toLowerCase() : value))
  user_id?: string;

  @ApiPropertyOptional({
    maxLength: 320,
    description:
      'Only the identities of the user with this e-mail address (any case); with user_id, both must name the same user',
    example: 'dev@acme.test',
  })
  @IsOptional()
  @IsString()
  @MaxLength(320)
  @Matches(/^[^\s@]+@[^\s@]+$/)
  email?: string;
}
