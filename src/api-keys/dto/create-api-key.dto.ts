import {
  ArrayUnique,
  IsArray,
  IsIn,
  IsString,
  Validate,
  ValidateIf,
  ValidatorConstraint,
  ValidatorConstraintInterface,
} from 'class-validator';
import { applyDecorators } from '@nestjs/common';
import { ApiPropertyOptional } from '@nestjs/swagger';
import { parseZonedTimestamp } from '../../common/timestamp';
import { Permission, PERMISSIONS } from '../../identity/roles';
import { AllowedCidrs, KeyRateLimitDto, RateLimit } from './key-policies.dto';

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

const EXPIRES_AT_DESCRIPTION =
  'When the key stops working: an ISO 8601 timestamp with a zone designator, at least 60 s ahead, or null ' +
  "for none. Absent or null under an organization key policy: creation + the policy's maximum; a later one is refused.";

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

  @ApiPropertyOptional({
    type: [String],
    enum: PERMISSIONS,
    uniqueItems: true,
    description:
      'Distinct permission names the key may use (its requests also need them in the owner role). Absent: those of ' +
      'api_keys:read, audit:read, integrations:read, integrations:write the creating request has. [] is allowed.',
    example: ['integrations:read'],
  })
  @ValidateIf((_dto: CreateApiKeyDto, value: unknown) => value !== undefined)
  @IsArray()
  @ArrayUnique()
  @IsIn(PERMISSIONS, { each: true })
  scopes?: Permission[];

  @ExpiresAt(EXPIRES_AT_DESCRIPTION)
  expires_at?: string | null;

  @AllowedCidrs(
    "The client addresses the key may be used from; absent or null: any (unless the organization's key policy " +
      'requires a list)',
  )
  allowed_cidrs?: string[] | null;

  @RateLimit('At most `requests` per `window_seconds` where Gatehouse sees them; absent or null: no limit')
  rate_limit?: KeyRateLimitDto | null;
}
