import { Transform } from 'class-transformer';
import { IsBoolean, IsOptional } from 'class-validator';
import { PageQueryDto, toBoolean } from '../../common/pagination';

export class ListApiKeysQuery extends PageQueryDto {
  @IsOptional()
  @Transform(toBoolean)
  @IsBoolean()
  include_revoked: boolean = false;
}
