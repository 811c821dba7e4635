import { ApiProperty } from '@nestjs/swagger';

/** docs/api.md#post-v1token */
export class AccessTokenResponse {
  @ApiProperty({ description: 'JWT (ES256, `typ: at+jwt`) to send as `Authorization: Bearer <token>`' })
  access_token: string;

  @ApiProperty({ enum: ['Bearer'] })
  token_type: 'Bearer';

  @ApiProperty({
    type: 'integer',
    description:
      "Lifetime in seconds: the organization's access-token lifetime (default 1800), or the requested " +
      "expires_in if shorter, cut to the time left before the key's expires_at",
  })
  expires_in: number;

  @ApiProperty({
    description:
      'The granted permissions, space-separated, in catalogue order (also the token\'s `scope` claim); "" for none',
    example: 'api_keys:read integrations:read',
  })
  scope: string;
}
