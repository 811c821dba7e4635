import { ApiPropertyOptional } from '@nestjs/swagger';
import { IsInt, Max, Min, ValidateIf } from 'class-validator';
import { DEFAULT_SECRET_OVERLAP_SECONDS, MAX_SECRET_OVERLAP_SECONDS } from '../webhooks.service';

/** POST /v1/organization/webhooks/{id}/rotate-secret (docs/webhooks.md#rotating-the-secret): the body is optional. */
export class RotateWebhookSecretDto {
  @ApiPropertyOptional({
    type: 'integer',
    minimum: 0,
    maximum: MAX_SECRET_OVERLAP_SECONDS,
    default: DEFAULT_SECRET_OVERLAP_SECONDS,
    description:
      'How long the old secret keeps signing deliveries beside the new one (each delivery then carries two ' +
      'signatures); 0 drops it at once',
  })
  @ValidateIf((_dto: RotateWebhookSecretDto, value: unknown) => value !== undefined)
  @IsInt()
  @Min(0)
  @Max(MAX_SECRET_OVERLAP_SECONDS)
  overlap_seconds?: number;
}
