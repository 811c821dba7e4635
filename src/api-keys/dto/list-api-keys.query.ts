import { Transform } from 'class-transformer';
import { IsBoolean, IsOptional } from 'class-validator';
import { ApiPropertyOptional } from '@nestjs/swagger';
import { PageQueryDto, toBoolean } from '../../common/pagination';

export class ListApiKeysQuery extends PageQueryDto {
  @ApiPropertyOptional({ type: Boolean, default: false, description: 'Include revoked keys' })
  @IsOptional()
  @Transform(toBoolean)
  @IsBoolean()
  include_revoked: boolean = false;
}
