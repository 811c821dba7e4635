import { applyDecorators } from '@nestjs/common';
import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { IsArray, IsInt, IsObject, IsString, Max, Min, ValidateIf, ValidateNested } from 'class-validator';
import {
  MAX_ALLOWED_CIDRS,
  MAX_RATE_LIMIT_REQUESTS,
  MAX_RATE_LIMIT_WINDOW_SECONDS,
  MIN_RATE_LIMIT_REQUESTS,
  MIN_RATE_LIMIT_WINDOW_SECONDS,
} from '../key-policies';

/** `rate_limit` (docs/api.md#allowlists-and-rate-limits). */
export class KeyRateLimitDto {
  @ApiProperty({ type: 'integer', minimum: MIN_RATE_LIMIT_REQUESTS, maximum: MAX_RATE_LIMIT_REQUESTS, example: 100 })
  @IsInt()
  @Min(MIN_RATE_LIMIT_REQUESTS)
  @Max(MAX_RATE_LIMIT_REQUESTS)
  requests: number;

  @ApiProperty({
    type: 'integer',
    minimum: MIN_RATE_LIMIT_WINDOW_SECONDS,
    maximum: MAX_RATE_LIMIT_WINDOW_SECONDS,
    example: 60,
  })
  @IsInt()
  @Min(MIN_RATE_LIMIT_WINDOW_SECONDS)
  @Max(MAX_RATE_LIMIT_WINDOW_SECONDS)
  window_seconds: number;
}

/** Absent or null pass; anything else is checked. */
const presentAndNotNull = (_dto: object, value: unknown): boolean => value !== undefined && value !== null;

/**
 * `allowed_cidrs`: null, or an array of strings. Whether each is a CIDR, and how many there are, is the service's rule
 * (key-policies.ts), which says in its message which entry is wrong.
 */
export function AllowedCidrs(description: string): PropertyDecorator {
  return applyDecorators(
    ApiPropertyOptional({
      type: [String],
      nullable: true,
      maxItems: MAX_ALLOWED_CIDRS,
      description:
        `${description}. IPv4 or IPv6 CIDRs or single addresses, at most ${MAX_ALLOWED_CIDRS}; stored normalized ` +
        '(host bits zeroed, IPv6 in RFC 5952 form, duplicates dropped)',
      example: ['203.0.113.0/24', '2001:db8::/32'],
    }),
    ValidateIf(presentAndNotNull),
    IsArray(),
    IsString({ each: true }),
  );
}

export function RateLimit(description: string): PropertyDecorator {
  return applyDecorators(
    ApiPropertyOptional({ type: () => KeyRateLimitDto, nullable: true, description }),
    ValidateIf(presentAndNotNull),
    IsObject(),
    ValidateNested(),
    Type(() => KeyRateLimitDto),
  );
}
