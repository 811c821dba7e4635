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

/**
 * The list window (docs/api.md#conventions): a page starts before the 10,000th item (`(page - 1) * limit < 10000`, else
 * 400), and a list reads and counts at most the first 10,000 items, so that no page costs more than reading 10,000
 * index entries however many rows match.
 */
export const LIST_WINDOW = 10_000;

/** "12" -> 12; anything that is not a plain run of digits stays as it is and fails @IsInt. */
export const toInteger = ({ value }: { value: unknown }): unknown =>
  typeof value === 'string' && /^\d{1,9}$/.test(value) ? Number(value) : value;

/** "true"/"false" -> boolean; anything else stays as it is and fails @IsBoolean. */
export const toBoolean = ({ value }: { value: unknown }): unknown =>
  value === 'true' ? true : value === 'false' ? false : value;

/** `page` starts inside the list window for the query's `limit` (an invalid limit fails on its own). */
@ValidatorConstraint({ name: 'pageWithinWindow' })
export class PageWithinWindow implements ValidatorConstraintInterface {
  validate(page: unknown, args: ValidationArguments): boolean {
    const { limit } = args.object as Partial<PageQueryDto>;
    if (typeof page !== 'number' || typeof limit !== 'number' || !Number.isInteger(limit)) return true;
    return (page - 1) * limit < LIST_WINDOW;
  }
}

/** `page` and `limit` (docs/api.md#get-v1user-api-keys, docs/api.md). */
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

/** The page fields every list response carries beside its items (docs/api.md). */
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
