import { ArrayUnique, IsArray, IsIn, IsString, Validate, ValidateIf } from 'class-validator';
import { ApiPropertyOptional } from '@nestjs/swagger';
import { ExpiresAt, LabelConstraint } from '../../credentials/dto/credential-fields';
import { Permission, PERMISSIONS } from '../../identity/roles';
import { AllowedCidrs, KeyRateLimitDto, RateLimit } from './key-policies.dto';

export { ExpiresAt, LabelConstraint, MAX_LABEL_LENGTH } from '../../credentials/dto/credential-fields';

const EXPIRES_AT_DESCRIPTION =
  'When the key stops working: an ISO 8601 timestamp with a zone designator, at least 60 s ahead, or null ' +
  "for none. Absent or null under an organization key policy: creation + the policy's maximum; a later one is refused.";

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
