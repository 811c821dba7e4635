import { ApiPropertyOptional } from '@nestjs/swagger';
import { IsInt, Max, Min, ValidateIf } from 'class-validator';
import { ExpiresAt } from './create-api-key.dto';

export const MAX_GRACE_PERIOD_SECONDS = 604_800;

export class RotateApiKeyDto {
  @ApiPropertyOptional({
    type: 'integer',
    minimum: 0,
    maximum: MAX_GRACE_PERIOD_SECONDS,
    default: 0,
    description:
      'How long the old key keeps working: 0 revokes it at once; N sets its expires_at to min(its expires_at, now + N s)',
  })
  @ValidateIf((_dto: RotateApiKeyDto, value: unknown) => value !== undefined)
  @IsInt()
  @Min(0)
  @Max(MAX_GRACE_PERIOD_SECONDS)
  grace_period_seconds?: number;

  @ExpiresAt(
    "The new key's expiry, as at creation. Absent: the old key's lifetime counted from now when it had one, " +
      "else none; within the organization's key policy either way.",
  )
  expires_at?: string | null;
}
