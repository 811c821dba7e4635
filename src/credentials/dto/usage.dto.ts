import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsIn, IsInt, IsOptional, IsString, Max, Min, Validate } from 'class-validator';
import { toInteger } from '../../common/pagination';
import { USAGE_CHANNELS, UsageChannel } from '../credential-usage.entity';
import { BUCKET_MINUTES, Granularity } from '../credential-usage.repository';
import { ZonedTimestampConstraint } from './credential-fields';

export const GRANULARITIES = Object.keys(BUCKET_MINUTES) as Granularity[];
export const MAX_BUSIEST = 100;

const FROM = 'An RFC 3339 instant; rounded down to the granularity. Default: `to` less 60 minutes, 24 hours or 30 days';
const TO = 'An RFC 3339 instant after `from`; rounded up to the granularity. Default: now';

/** A range of time (docs/api.md#usage-over-time). */
export class UsageRangeQuery {
  @ApiPropertyOptional({ type: String, format: 'date-time', description: FROM, example: '2026-11-21T00:00:00Z' })
  @IsOptional()
  @IsString()
  @Validate(ZonedTimestampConstraint)
  from?: string;

  @ApiPropertyOptional({ type: String, format: 'date-time', description: TO, example: '2026-11-22T00:00:00Z' })
  @IsOptional()
  @IsString()
  @Validate(ZonedTimestampConstraint)
  to?: string;
}

/** A credential's usage: a range, in buckets of one granularity. */
export class UsageQuery extends UsageRangeQuery {
  @ApiPropertyOptional({
    enum: GRANULARITIES,
    default: 'hour',
    description: 'The buckets: a minute, an hour or a day (UTC); at most 1440 of them',
  })
  @IsOptional()
  @IsIn(GRANULARITIES)
  granularity: Granularity = 'hour';
}

/** The organization's busiest credentials in a range (default: the last 24 hours). */
export class BusiestQuery extends UsageRangeQuery {
  @ApiPropertyOptional({ type: 'integer', minimum: 1, maximum: MAX_BUSIEST, default: 10 })
  @IsOptional()
  @Transform(toInteger)
  @IsInt()
  @Min(1)
  @Max(MAX_BUSIEST)
  limit: number = 10;
}

export class UsageCountsView {
  @ApiProperty({ type: 'integer', description: 'Successful uses' })
  succeeded: number;
  @ApiProperty({ type: 'integer', description: 'Refused uses of the identified credential' })
  refused: number;
}

/** Counts per channel; a channel without uses in the bucket is left out. */
export class UsageByChannelView {
  @ApiPropertyOptional({ type: UsageCountsView, description: 'POST /v1/token' })
  key_exchange?: UsageCountsView;
  @ApiPropertyOptional({ type: UsageCountsView, description: 'POST /oauth/token (client credentials, token exchange)' })
  oauth_token?: UsageCountsView;
  @ApiPropertyOptional({ type: UsageCountsView, description: '/v1/forward-auth' })
  forward_auth?: UsageCountsView;
  @ApiPropertyOptional({ type: UsageCountsView, description: 'POST /oauth/introspect' })
  introspection?: UsageCountsView;
}

export class UsageBucketView extends UsageCountsView {
  @ApiProperty({ format: 'date-time', description: "The bucket's first instant" })
  start: string;
  @ApiProperty({ type: UsageByChannelView })
  channels: UsageByChannelView;
}

export class UsageView extends UsageCountsView {
  @ApiProperty({ format: 'uuid' })
  credential_id: string;
  @ApiProperty({ enum: GRANULARITIES })
  granularity: Granularity;
  @ApiProperty({ format: 'date-time', description: 'The first bucket’s start' })
  from: string;
  @ApiProperty({ format: 'date-time', description: 'The last bucket’s end' })
  to: string;
  @ApiProperty({ type: UsageByChannelView, description: 'The totals per channel' })
  channels: UsageByChannelView;
  @ApiProperty({ type: [UsageBucketView], description: 'Every bucket of the range, oldest first, empty ones too' })
  buckets: UsageBucketView[];
}

export class UsageResponse {
  @ApiProperty({ type: UsageView })
  usage: UsageView;
}

export class BusyCredentialView extends UsageCountsView {
  @ApiProperty({ enum: ['api_key', 'workload_identity'] })
  kind: string;
  @ApiProperty({ format: 'uuid' })
  id: string;
  @ApiProperty({ description: '"" when none was given' })
  label: string;
  @ApiProperty({ enum: ['ACTIVE', 'REVOKED', 'EXPIRED'] })
  status: string;
  @ApiProperty({ format: 'uuid' })
  user_id: string;
  @ApiProperty({ nullable: true, type: String, description: "The owner's e-mail address" })
  owner_email: string | null;
}

export class BusiestResponse {
  @ApiProperty({ format: 'date-time' })
  from: string;
  @ApiProperty({ format: 'date-time' })
  to: string;
  @ApiProperty({ type: [BusyCredentialView], description: 'Most uses (successful and refused) first' })
  credentials: BusyCredentialView[];
}

/** The counts of one channel, as the views key them. */
export type ChannelCounts = Partial<Record<UsageChannel, UsageCountsView>>;
export { USAGE_CHANNELS };
