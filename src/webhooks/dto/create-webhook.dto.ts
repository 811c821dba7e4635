import { ApiProperty } from '@nestjs/swagger';
import { IsArray, IsString } from 'class-validator';
import { WEBHOOK_EVENT_TYPES } from '../webhook-events';

/**
 * POST /v1/organization/webhooks (docs/webhooks.md#managing-endpoints). Types only here: what the URL and the events
 * may be is checked by the service, which answers what is wrong in its message.
 */
export class CreateWebhookDto {
  @ApiProperty({
    maxLength: 2048,
    example: 'https://hooks.example.com/gatehouse',
    description: 'https (http only to a loopback address outside production); no private or reserved address',
  })
  @IsString()
  url: string;

  @ApiProperty({
    type: 'array',
    items: { type: 'string', enum: [...WEBHOOK_EVENT_TYPES] },
    minItems: 1,
    uniqueItems: true,
    description: 'The events this endpoint receives',
  })
  @IsArray()
  @IsString({ each: true })
  events: string[];
}
