import { ApiProperty } from '@nestjs/swagger';
import { PageMetaView } from '../../common/pagination';
import { maskPermissions, Permission, PERMISSIONS } from '../../identity/roles';
import { ApiKey, ApiKeyDisplayStatus, displayStatus } from '../api-key.entity';
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
export class ApiKeyView {
  @ApiProperty({ format: 'uuid' })
  id: string;
  @ApiProperty({ format: 'uuid' })
  organization_id: string;
  @ApiProperty({ format: 'uuid' })
  user_id: string;
  @ApiProperty({ description: '"" when none was given' })
  label: string;
  @ApiProperty({
    enum: ['ACTIVE', 'REVOKED', 'EXPIRED'],
    description: 'EXPIRED once expires_at has passed (REVOKED wins)',
  })
  status: ApiKeyDisplayStatus;
  @ApiProperty({
    type: [String],
    enum: PERMISSIONS,
    description: 'The permissions the key may use, in catalogue order',
    example: ['api_keys:read', 'integrations:read'],
  })
  scopes: Permission[];
  @ApiProperty({ format: 'date-time', nullable: true, type: String, description: 'null: the key does not expire' })
  expires_at: string | null;
  @ApiProperty({ format: 'date-time' })
  created_at: string;
  @ApiProperty({ format: 'date-time' })
  updated_at: string;
  @ApiProperty({
    format: 'date-time',
    nullable: true,
    type: String,
    description: 'The last successful exchange (POST /v1/token); null until the first',
  })
  last_used_at: string | null;
  @ApiProperty({
    nullable: true,
    type: String,
    maxLength: 45,
    description: 'The client address of that exchange (as the rate limits see it, TRUST_PROXY applied)',
    example: '203.0.113.7',
  })
  last_used_ip: string | null;
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
    return {
      id: key.id,
      organization_id: key.organizationId,
      user_id: key.userId,
      label: key.label,
      status: displayStatus(key, Date.now()),
      scopes: maskPermissions(key.scopes),
      expires_at: key.expiresAt === null ? null : key.expiresAt.toISOString(),
      created_at: key.createdAt.toISOString(),
      updated_at: key.updatedAt.toISOString(),
      last_used_at: key.lastUsedAt === null ? null : key.lastUsedAt.toISOString(),
      last_used_ip: key.lastUsedIp,
      last_used_user_agent: key.lastUsedUserAgent,
      replaced_by: key.replacedBy,
      allowed_cidrs: allowedCidrsOf(key.allowedCidrs),
      rate_limit: rateLimitView(key),
    };
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

export class ApiKeyResponse {
  @ApiProperty({ type: () => ApiKeyView })
  api_key: ApiKeyView;
}

/** A key as organization key management shows it: with its owner's e-mail address. */
export class OrganizationApiKeyView extends ApiKeyView {
  @ApiProperty({ nullable: true, type: String, description: "The owner's e-mail address", example: 'dev@acme.test' })
  owner_email: string | null;

  static withOwner(key: ApiKey, emails: ReadonlyMap<string, string>): OrganizationApiKeyView {
    return { ...ApiKeyView.from(key), owner_email: emails.get(key.userId) ?? null };
  }
}

export class OrganizationApiKeyResponse {
  @ApiProperty({ type: () => OrganizationApiKeyView })
  api_key: OrganizationApiKeyView;
}

export class OrganizationApiKeyListResponse extends PageMetaView {
  @ApiProperty({ type: () => [OrganizationApiKeyView] })
  api_keys: OrganizationApiKeyView[];
}

export class ApiKeyListResponse extends PageMetaView {
  @ApiProperty({ type: () => [ApiKeyView] })
  api_keys: ApiKeyView[];
}
