import { ApiPropertyOptional } from '@nestjs/swagger';
import { IsString, Validate, ValidateIf } from 'class-validator';
import { LabelConstraint, MAX_LABEL_LENGTH } from './create-api-key.dto';
import { AllowedCidrs, KeyRateLimitDto, RateLimit } from './key-policies.dto';

/** PATCH /v1/user-api-keys/{id} (docs/api.md#patch-v1user-api-keysid): an absent field stays as it is. */
export class UpdateApiKeyDto {
  @ApiPropertyOptional({ maxLength: MAX_LABEL_LENGTH, description: 'A new label (not null)', example: 'ci deploys' })
  @ValidateIf((_dto: UpdateApiKeyDto, value: unknown) => value !== undefined)
  @IsString()
  @Validate(LabelConstraint)
  label?: string;

  @AllowedCidrs('The new allowlist; null removes it (refused when the organization requires one)')
  allowed_cidrs?: string[] | null;

  @RateLimit('The new rate limit; null removes it')
  rate_limit?: KeyRateLimitDto | null;
}
