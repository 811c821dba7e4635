import { ApiProperty } from '@nestjs/swagger';
import { CredentialView } from '../../credentials/dto/credential.view';
import type { ApiKey } from '../api-key.entity';
import { allowedCidrsOf, rateLimitOf } from '../key-policies';
import { MAX_USER_AGENT_LENGTH } from '../usage/key-use';

/** A key's rate limit (docs/api.md#allowlists-and-rate-limits). */
export class KeyRateLimitView {
  @ApiProperty({ type: 'integer', example: 100 })
  requests: number;
  @ApiProperty({ type: 'integer', example: 60 })
  window_seconds: number;
}

/** docs/api.md#api-key-object, without the secret. */
export class ApiKeyView extends CredentialView {
  @ApiProperty({
    nullable: true,
    type: String,
    maxLength: MAX_USER_AGENT_LENGTH,
    description: `The User-Agent of that exchange, without control characters, cut to ${MAX_USER_AGENT_LENGTH} characters; null when it had none`,
    example: 'deploy-bot/2.1',
  })
  last_used_user_agent: string | null;
  @ApiProperty({
    format: 'uuid',
    nullable: true,
    type: String,
    description:
      'The key a rotation replaced this one by (this one then revoked, or working until its grace ends); null when never rotated',
  })
  replaced_by: string | null;
  @ApiProperty({
    type: [String],
    nullable: true,
    description: 'The client addresses the key may be used from (normalized CIDRs); null: any address',
    example: ['203.0.113.0/24'],
  })
  allowed_cidrs: string[] | null;
  @ApiProperty({
    type: () => KeyRateLimitView,
    nullable: true,
    description: 'At most `requests` per `window_seconds` at the exchange and at forward auth; null: no limit',
  })
  rate_limit: KeyRateLimitView | null;

  static from(key: ApiKey): ApiKeyView {
    // Added to the fields' object, not spread into a new one: on Node 20 a spread followed by more properties costs
    // 10-30 µs (docs/performance.md#object-spread-on-node-20).
    return Object.assign(CredentialView.fields(key), {
      last_used_user_agent: key.lastUsedUserAgent,
      replaced_by: key.replacedBy,
      allowed_cidrs: allowedCidrsOf(key.allowedCidrs),
      rate_limit: rateLimitView(key),
    });
  }
}

function rateLimitView(key: ApiKey): KeyRateLimitView | null {
  const limit = rateLimitOf(key);
  return limit === null ? null : { requests: limit.requests, window_seconds: limit.windowSeconds };
}

/** The creation record: the only one that carries `value`. */
export class CreatedApiKeyView extends ApiKeyView {
  @ApiProperty({ description: 'The secret key value: returned once, at creation' })
  value: string;
}

export class CreateApiKeyResponse {
  @ApiProperty({ type: () => CreatedApiKeyView })
  api_key: CreatedApiKeyView;
  @ApiProperty({ description: 'The secret key value again (same as api_key.value)' })
  opaque_key: string;
}

export class RotateApiKeyResponse extends CreateApiKeyResponse {
  @ApiProperty({ type: () => ApiKeyView, description: 'The key replaced, as the rotation left it' })
  previous_api_key: ApiKeyView;
}
