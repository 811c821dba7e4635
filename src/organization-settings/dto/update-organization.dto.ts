import { ApiPropertyOptional } from '@nestjs/swagger';
import { IsBoolean, IsInt, Max, Min, ValidateIf } from 'class-validator';
import {
  MAX_ACCESS_TOKEN_LIFETIME,
  MAX_KEY_LIFETIME_DAYS,
  MIN_ACCESS_TOKEN_LIFETIME,
  MIN_KEY_LIFETIME_DAYS,
} from '../../identity/organization.entity';

/** Optional means "may be absent" (docs/api.md#conventions): null is a value, and refused where not allowed. */
const present = (_object: object, value: unknown): boolean => value !== undefined;
const presentAndNotNull = (_object: object, value: unknown): boolean => value !== undefined && value !== null;

/** PATCH /v1/organization (docs/api.md#patch-v1organization): what is absent stays as it is. */
export class UpdateOrganizationDto {
  @ApiPropertyOptional({ type: 'integer', minimum: MIN_ACCESS_TOKEN_LIFETIME, maximum: MAX_ACCESS_TOKEN_LIFETIME })
  @ValidateIf(present)
  @IsInt()
  @Min(MIN_ACCESS_TOKEN_LIFETIME)
  @Max(MAX_ACCESS_TOKEN_LIFETIME)
  access_token_lifetime?: number;

  @ApiPropertyOptional({
    type: 'integer',
    nullable: true,
    minimum: MIN_KEY_LIFETIME_DAYS,
    maximum: MAX_KEY_LIFETIME_DAYS,
    description: 'null removes the policy; applies to keys created after the change',
  })
  @ValidateIf(presentAndNotNull)
  @IsInt()
  @Min(MIN_KEY_LIFETIME_DAYS)
  @Max(MAX_KEY_LIFETIME_DAYS)
  max_key_lifetime_days?: number | null;

  @ApiPropertyOptional({
    type: Boolean,
    description:
      'true: keys created (or rotated, or changed) from now on must carry allowed_cidrs that do not allow every IPv4 ' +
      'or every IPv6 address, by one entry (a /0) or together (0.0.0.0/1 and 128.0.0.0/1)',
  })
  @ValidateIf(present)
  @IsBoolean()
  require_key_allowlist?: boolean;
}
