import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';

/** The OAuth endpoints' error body (RFC 6749 section 5.2, RFC 7662 section 2.3). */
export class OAuthErrorBody {
  @ApiProperty({
    enum: [
      'invalid_request',
      'invalid_client',
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
}
