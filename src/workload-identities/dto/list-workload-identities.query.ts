import { ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsBoolean, IsOptional } from 'class-validator';
import { PageQueryDto, toBoolean } from '../../common/pagination';

export class ListWorkloadIdentitiesQuery extends PageQueryDto {
  @ApiPropertyOptional({ type: Boolean, default: false, description: 'Include revoked identities' })
  @IsOptional()
  @Transform(toBoolean)
  @IsBoolean()
  include_revoked: boolean = false;
}
