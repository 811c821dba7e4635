import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { ERROR_REASONS } from '../common/errors';

/** The OAuth endpoints' error body (RFC 6749 section 5.2, RFC 7662 section 2.3). */
export class OAuthErrorBody {
  @ApiProperty({
    enum: [
      'invalid_request',
      'invalid_client',
      'invalid_grant',
      'invalid_scope',
      'invalid_target',
      'unsupported_grant_type',
      'temporarily_unavailable',
      'server_error',
    ],
    example: 'invalid_client',
  })
  error: string;

  @ApiPropertyOptional({ example: 'invalid api key credentials' })
  error_description?: string;

  @ApiProperty({ enum: Object.keys(ERROR_REASONS), enumName: 'ErrorReason', example: 'api_key_invalid_credentials' })
  reason: string;
}

/** POST /oauth/token's answer (RFC 6749 section 5.1; RFC 8693 section 2.2.1 for the token exchange). */
export class OAuthTokenResponse {
  @ApiProperty({
    description: "An access token (JWT, `typ: at+jwt`); for a person's ID token exchanged, a session token (JWT)",
  })
  access_token: string;

  @ApiPropertyOptional({
    description: 'Token exchange only: `urn:ietf:params:oauth:token-type:access_token`, or `…:jwt` for a session token',
    enum: ['urn:ietf:params:oauth:token-type:access_token', 'urn:ietf:params:oauth:token-type:jwt'],
  })
  issued_token_type?: string;

  @ApiProperty({ enum: ['Bearer'] })
  token_type: 'Bearer';

  @ApiProperty({ type: 'integer', description: 'Lifetime in seconds' })
  expires_in: number;

  @ApiPropertyOptional({
    description: 'The granted permissions, space-separated (access tokens; a session token has its role)',
    example: 'api_keys:read integrations:read',
  })
  scope?: string;

  @ApiPropertyOptional({
    description: 'authorization_code and refresh_token grants: the next refresh token (each works once)',
  })
  refresh_token?: string;
}
