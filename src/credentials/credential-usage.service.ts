import { Injectable } from '@nestjs/common';
import { AppError } from '../common/errors';
import { parseZonedTimestamp } from '../common/timestamp';
import { IdentityService } from '../identity/identity.service';
import { Credential, displayStatus } from './credential.entity';
import type { OwnerIds } from './credential-owner';
import { ownedBy } from './credential-owner';
import { CredentialKinds } from './credential-kinds';
import { USAGE_CHANNELS } from './credential-usage.entity';
import { BUCKET_MINUTES, CredentialUsageRepository, Granularity, UsageTotalRow } from './credential-usage.repository';
import type { CredentialsRepository } from './credentials.repository';
import type {
  BusiestQuery,
  BusiestResponse,
  BusyCredentialView,
  ChannelCounts,
  UsageBucketView,
  UsageQuery,
  UsageView,
} from './dto/usage.dto';

const MINUTE_MS = 60_000;
/** The longest range, in buckets (a day of minutes, 60 days of hours); rounded out to whole buckets, one more. */
export const MAX_BUCKETS = 1440;
/** The range without `from`: `to` less this many buckets (an hour of minutes, a day of hours, 30 days). */
const DEFAULT_BUCKETS: Record<Granularity, number> = { minute: 60, hour: 24, day: 30 };
const DEFAULT_BUSIEST_MINUTES = 24 * 60;

function rangeInvalid(message: string): AppError {
  return new AppError('usage_range_invalid', { message });
}

const iso = (minute: number): string => new Date(minute * MINUTE_MS).toISOString();

/**
 * Usage over time (docs/api.md#usage-over-time): a credential's series for its owner or its organization's admins, and
 * the organization's busiest credentials of every kind. The counts are CredentialUsageCounter's, as written: an
 * instance's uses of the last USAGE_FLUSH_MS are not in them yet.
 */
@Injectable()
export class CredentialUsageService {
  constructor(
    private readonly usage: CredentialUsageRepository,
    private readonly kinds: CredentialKinds,
    private readonly identity: IdentityService,
  ) {}

  /** The caller's own credential's usage; someone else's is "not found". */
  async series<T extends Credential>(
    store: CredentialsRepository<T>,
    owner: OwnerIds,
    id: string,
    query: UsageQuery,
  ): Promise<UsageView> {
    const credential = await store.findById(id);
    if (credential === undefined || !ownedBy(credential, owner)) throw store.kind.notFound();
    return this.seriesOf(id, query);
  }

  /** Any credential of the caller's organization's usage; another organization's is "not found". */
  async seriesInOrganization<T extends Credential>(
    store: CredentialsRepository<T>,
    caller: OwnerIds,
    id: string,
    query: UsageQuery,
  ): Promise<UsageView> {
    const credential = await store.findById(id);
    if (credential === undefined || credential.organizationId !== caller.organizationId) throw store.kind.notFound();
    return this.seriesOf(id, query);
  }

  /** The organization's credentials with the most uses in the range, most first, with their labels and owners. */
  async busiest(caller: OwnerIds, query: BusiestQuery, nowMs = Date.now()): Promise<BusiestResponse> {
    const { from, to } = range(query, 1, DEFAULT_BUSIEST_MINUTES, nowMs, Infinity);
    const totals = await this.usage.busiest(caller.organizationId, from, to, query.limit);
    const found = await Promise.all(
      totals.map(async (total) => ({
        total,
        credential: await this.kinds.of(total.kind)?.findById?.(total.credentialId),
      })),
    );
    // Credentials are never deleted; a kind the application no longer has is left out.
    const credentials = found.filter(
      (entry): entry is { total: UsageTotalRow; credential: Credential } => entry.credential !== undefined,
    );
    const emails = await this.identity.emailsOf(credentials.map(({ credential }) => credential.userId));
    return {
      from: iso(from),
      to: iso(to),
      credentials: credentials.map(({ total, credential }): BusyCredentialView => ({
        kind: total.kind,
        id: total.credentialId,
        label: credential.label,
        status: displayStatus(credential, nowMs),
        user_id: credential.userId,
        owner_email: emails.get(credential.userId) ?? null,
        succeeded: total.succeeded,
        refused: total.refused,
      })),
    };
  }

  private async seriesOf(id: string, query: UsageQuery, nowMs = Date.now()): Promise<UsageView> {
    const { granularity } = query;
    const bucket = BUCKET_MINUTES[granularity];
    const { from, to } = range(query, bucket, DEFAULT_BUCKETS[granularity] * bucket, nowMs, MAX_BUCKETS);
    const rows = await this.usage.seriesOf(id, granularity, from, to);
    const buckets: UsageBucketView[] = [];
    const totals: ChannelCounts = {};
    let succeeded = 0;
    let refused = 0;
    let next = 0;
    for (let start = from; start < to; start += bucket) {
      const view: UsageBucketView = { start: iso(start), succeeded: 0, refused: 0, channels: {} };
      for (; next < rows.length && rows[next].start === start; next += 1) {
        const row = rows[next];
        view.channels[row.channel] = { succeeded: row.succeeded, refused: row.refused };
        view.succeeded += row.succeeded;
        view.refused += row.refused;
        const total = (totals[row.channel] ??= { succeeded: 0, refused: 0 });
        total.succeeded += row.succeeded;
        total.refused += row.refused;
      }
      succeeded += view.succeeded;
      refused += view.refused;
      buckets.push(view);
    }
    const channels: ChannelCounts = {};
    for (const channel of USAGE_CHANNELS) if (totals[channel] !== undefined) channels[channel] = totals[channel];
    return { credential_id: id, granularity, from: iso(from), to: iso(to), succeeded, refused, channels, buckets };
  }
}

/**
 * The query's range in whole buckets of `bucket` minutes since the epoch: `from` rounded down, `to` up; without `to`,
 * now; without `from`, `to` less `defaultMinutes`. Refused when empty, or longer than `maxBuckets` buckets.
 */
function range(
  query: { from?: string; to?: string },
  bucket: number,
  defaultMinutes: number,
  nowMs: number,
  maxBuckets: number,
): { from: number; to: number } {
  const toMs = query.to === undefined ? nowMs : parseZonedTimestamp(query.to)!;
  const to = Math.ceil(toMs / MINUTE_MS / bucket) * bucket;
  if (query.from === undefined) return { from: to - defaultMinutes, to };
  const fromMs = parseZonedTimestamp(query.from)!;
  if (!(fromMs < toMs)) throw rangeInvalid('from must be before to');
  const from = Math.floor(fromMs / MINUTE_MS / bucket) * bucket;
  // Rounded out, a range of `maxBuckets` buckets may touch one more (a day by the minute, asked for at 12:00:30); ended by
  // the server's clock (no `to`), one more again: the client's "a day ago" was read before the server's minute turned.
  const buckets = (to - from) / bucket;
  if (buckets > maxBuckets + (query.to === undefined ? 2 : 1)) {
    throw rangeInvalid(`at most ${maxBuckets} buckets: ${buckets} are too many, choose a coarser granularity`);
  }
  return { from, to };
}
