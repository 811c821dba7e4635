import { IsOptional, IsString, Validate, ValidatorConstraint, ValidatorConstraintInterface } from 'class-validator';

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
  @IsOptional()
  @IsString()
  @Validate(LabelConstraint)
  label?: string;
}
