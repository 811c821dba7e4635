import { ApiProperty } from '@nestjs/swagger';
import { IsString, Length } from 'class-validator';

/** GET /v1/console/sso: the organization whose identity provider signs the person in. */
export class SsoStartQuery {
  @ApiProperty({ description: "The organization's name, as the admin CLI's --org names it", example: 'acme' })
  @IsString()
  @Length(1, 255)
  org: string;
}
