import { ApiProperty } from '@nestjs/swagger';
import {
  MAX_ACCESS_TOKEN_LIFETIME,
  MAX_KEY_LIFETIME_DAYS,
  MIN_ACCESS_TOKEN_LIFETIME,
  MIN_KEY_LIFETIME_DAYS,
  type Organization,
} from '../../identity/organization.entity';

/** ORGANIZATION of docs/api.md#organization-settings. */
export class OrganizationView {
  @ApiProperty({ format: 'uuid' })
  id: string;
  @ApiProperty()
  name: string;
  @ApiProperty({
    type: 'integer',
    minimum: MIN_ACCESS_TOKEN_LIFETIME,
    maximum: MAX_ACCESS_TOKEN_LIFETIME,
    description: 'Seconds an access token from POST /v1/token lives (at most)',
  })
  access_token_lifetime: number;
  @ApiProperty({
    type: 'integer',
    nullable: true,
    minimum: MIN_KEY_LIFETIME_DAYS,
    maximum: MAX_KEY_LIFETIME_DAYS,
    description: 'The longest lifetime of a key created from now on, in days; null: no limit',
  })
  max_key_lifetime_days: number | null;
  @ApiProperty({
    description:
      'Whether new keys must carry an allowlist (allowed_cidrs) that does not allow every IPv4 or every IPv6 address',
  })
  require_key_allowlist: boolean;

  static from(organization: Organization): OrganizationView {
    return {
      id: organization.id,
      name: organization.name,
      access_token_lifetime: organization.accessTokenLifetime,
      max_key_lifetime_days: organization.maxKeyLifetimeDays,
      require_key_allowlist: organization.requireKeyAllowlist,
    };
  }
}

export class OrganizationResponse {
  @ApiProperty({ type: OrganizationView })
  organization: OrganizationView;
}
