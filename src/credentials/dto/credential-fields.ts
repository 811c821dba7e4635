import { applyDecorators } from '@nestjs/common';
import { ApiPropertyOptional } from '@nestjs/swagger';
import { Validate, ValidateIf, ValidatorConstraint, ValidatorConstraintInterface } from 'class-validator';
import { parseZonedTimestamp } from '../../common/timestamp';

export const MAX_LABEL_LENGTH = 255;

/**
 * At most 255 Unicode characters (code points: an emoji is one), well-formed (no lone surrogate)
 * and without NUL, which PostgreSQL cannot store.
 */
@ValidatorConstraint({ name: 'label' })
export class LabelConstraint implements ValidatorConstraintInterface {
  validate(value: unknown): boolean {
    return (
      typeof value === 'string' &&
      value.isWellFormed() &&
      !value.includes('\u0000') &&
      [...value].length <= MAX_LABEL_LENGTH
    );
  }
}

/** An ISO 8601 timestamp with a zone designator (src/common/timestamp.ts); how far ahead is the service's rule. */
@ValidatorConstraint({ name: 'zonedTimestamp' })
export class ZonedTimestampConstraint implements ValidatorConstraintInterface {
  validate(value: unknown): boolean {
    return typeof value === 'string' && parseZonedTimestamp(value) !== null;
  }
}

/** `expires_at` as the creation and the rotation take it: absent, null, or a zoned timestamp. */
export function ExpiresAt(description: string): PropertyDecorator {
  return applyDecorators(
    ApiPropertyOptional({
      type: String,
      format: 'date-time',
      nullable: true,
      description,
      example: '2027-01-31T00:00:00Z',
    }),
    ValidateIf((_dto: object, value: unknown) => value !== undefined && value !== null),
    Validate(ZonedTimestampConstraint),
  );
}
