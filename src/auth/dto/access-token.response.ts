import { ApiProperty } from '@nestjs/swagger';

/** docs/api.md#post-v1token */
export class AccessTokenResponse {
  @ApiProperty({ description: 'JWT (ES256) to send as `Authorization: Bearer <token>`' })
  access_token: string;

  @ApiProperty({ enum: ['Bearer'] })
  token_type: 'Bearer';

  @ApiProperty({ type: 'integer', description: 'Lifetime in seconds (organization setting, default 1800)' })
  expires_in: number;
}
