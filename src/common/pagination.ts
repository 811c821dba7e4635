import { Transform } from 'class-transformer';
import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import {
  IsInt,
  IsOptional,
  Max,
  Min,
  Validate,
  ValidationArguments,
  ValidatorConstraint,
  ValidatorConstraintInterface,
} from 'class-validator';

export const DEFAULT_PAGE_SIZE = 20;
export const MAX_PAGE_SIZE = 100;

/** Caps what any page costs, however many rows match (docs/api.md#conventions). */
export const LIST_WINDOW = 10_000;

/** "12" -> 12; anything that is not a plain run of digits stays as it is and fails @IsInt. */
export const toInteger = ({ value }: { value: unknown }): unknown =>
  typeof value === 'string' && /^\d{1,9}$/.test(value) ? Number(value) : value;

/** "true"/"false" -> boolean; anything else stays as it is and fails @IsBoolean. */
export const toBoolean = ({ value }: { value: unknown }): unknown =>
  value === 'true' ? true : value === 'false' ? false : value;

@ValidatorConstraint({ name: 'pageWithinWindow' })
export class PageWithinWindow implements ValidatorConstraintInterface {
  validate(page: unknown, args: ValidationArguments): boolean {
    const { limit } = args.object as Partial<PageQueryDto>;
    if (typeof page !== 'number' || typeof limit !== 'number' || !Number.isInteger(limit)) return true;
    return (page - 1) * limit < LIST_WINDOW;
  }
}

export class PageQueryDto {
  @ApiPropertyOptional({
    type: 'integer',
    minimum: 1,
    default: 1,
    description: `(page - 1) * limit must be less than ${LIST_WINDOW}`,
  })
  @IsOptional()
  @Transform(toInteger)
  @IsInt()
  @Min(1)
  @Validate(PageWithinWindow)
  page: number = 1;

  @ApiPropertyOptional({ type: 'integer', minimum: 1, maximum: MAX_PAGE_SIZE, default: DEFAULT_PAGE_SIZE })
  @IsOptional()
  @Transform(toInteger)
  @IsInt()
  @Min(1)
  @Max(MAX_PAGE_SIZE)
  limit: number = DEFAULT_PAGE_SIZE;
}

export interface Page<T> {
  items: T[];
  page: number;
  limit: number;
  totalCount: number;
}

export class PageMetaView {
  @ApiProperty({ type: 'integer' })
  page: number;

  @ApiProperty({ type: 'integer' })
  limit: number;

  @ApiProperty({ type: 'integer' })
  total_count: number;

  static of(page: Page<unknown>): PageMetaView {
    return { page: page.page, limit: page.limit, total_count: page.totalCount };
  }
}
