import { IsString, Validate, ValidateIf, ValidatorConstraint, ValidatorConstraintInterface } from 'class-validator';
import { ApiPropertyOptional } from '@nestjs/swagger';

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

export class CreateApiKeyDto {
  @ApiPropertyOptional({
    maxLength: 255,
    description: 'Human-readable name; at most 255 Unicode characters',
    example: 'ci deploys',
  })
  // Optional means "may be absent", not "may be null": null is not a string (docs/api.md).
  @ValidateIf((_dto: CreateApiKeyDto, value: unknown) => value !== undefined)
  @IsString()
  @Validate(LabelConstraint)
  label?: string;
}
