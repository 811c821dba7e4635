import { ApiProperty } from '@nestjs/swagger';

/** SPEC.md section 2.2 */
export class AccessTokenResponse {
  @ApiProperty({ description: 'JWT (ES256) to send as `Authorization: Bearer <token>`' })
  access_token: string;

  @ApiProperty({ enum: ['Bearer'] })
  token_type: 'Bearer';

  @ApiProperty({ type: 'integer', description: 'Lifetime in seconds (organization setting, default 1800)' })
  expires_in: number;
}
