import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { EntityRows } from '../database/entity-rows';
import { Dialect, param, raw, sql, Statement } from '../database/sql';
import type { Transaction } from '../database/unit-of-work';
import { CredentialUsageHour, CredentialUsageMinute, UsageChannel } from './credential-usage.entity';

/** One row's counts to add, as the upsert binds them. */
export interface UsageRecord {
  credential_id: string;
  minute: number;
  channel: UsageChannel;
  credential_kind: string;
  organization_id: string;
  succeeded: number;
  refused: number;
}

/** One bucket of one channel: its first minute (since the epoch) and its counts. */
export interface UsageBucketRow {
  start: number;
  channel: UsageChannel;
  succeeded: number;
  refused: number;
}

/** A credential's counts in a range. */
export interface UsageTotalRow {
  kind: string;
  credentialId: string;
  succeeded: number;
  refused: number;
}

/** The bucket sizes the series are read in, in minutes: minute, hour, day. */
export const BUCKET_MINUTES = { minute: 1, hour: 60, day: 1440 } as const;
export type Granularity = keyof typeof BUCKET_MINUTES;

type SeriesArgs = { credentialId: string; from: number; to: number };
type TopArgs = { organizationId: string; from: number; hoursFrom: number; hoursTo: number; to: number; limit: number };
type PruneArgs = { cutoff: number; limit: number };

/** Rows one upsert writes at most. */
const UPSERT_CHUNK = 500;

/**
 * Usage over time's tables (docs/adr/0058-usage-over-time.md): the counts added in batches (CredentialUsageCounter),
 * per minute and rolled up per hour in the same transaction; a credential's series; an organization's busiest
 * credentials; the retention's deletes.
 */
@Injectable()
export class CredentialUsageRepository {
  private readonly db: Dialect;
  private readonly upserts: { minutes: Statement<{ rows: UsageRecord[] }>; hours: Statement<{ rows: UsageRecord[] }> };
  private readonly series: Record<Granularity, Statement<SeriesArgs>>;
  private readonly top: Statement<TopArgs>;
  private readonly prunes: { minutes: Statement<PruneArgs>; hours: Statement<PruneArgs> };

  constructor(@InjectDataSource() private readonly dataSource: DataSource) {
    const db = Dialect.of(dataSource);
    this.db = db;
    const minutes = EntityRows.of(dataSource, CredentialUsageMinute);
    const hours = EntityRows.of(dataSource, CredentialUsageHour);
    const records = db.jsonRecords('rows', 'u', [
      ['credential_id', 'uuid'],
      ['minute', 'integer'],
      ['channel', 'varchar'],
      ['credential_kind', 'varchar'],
      ['organization_id', 'uuid'],
      ['succeeded', 'integer'],
      ['refused', 'integer'],
    ]);
    // Counts are added, whichever instance wrote first. Rows in key order: two instances' upserts lock the rows they
    // share in the same order and never wait on each other in a cycle. `WHERE true`: SQLite's upsert after a SELECT.
    const upsert = (rows: EntityRows<object>) =>
      db.prepare<{ rows: UsageRecord[] }>(sql`INSERT INTO ${raw(rows.table)} (${raw(rows.columns)})
        SELECT ${raw(rows.columnNames.map((column) => `u.${column}`).join(', '))} FROM ${records}
        WHERE true ORDER BY u.credential_id, u.minute, u.channel
        ON CONFLICT (credential_id, minute, channel) DO UPDATE
        SET succeeded = ${raw(rows.table)}.succeeded + excluded.succeeded,
            refused = ${raw(rows.table)}.refused + excluded.refused`);
    this.upserts = { minutes: upsert(minutes), hours: upsert(hours) };

    // A minute's series from the minutes; an hour's and a day's from the hours (a day is 24 of them, at UTC midnight).
    const seriesOf = (table: string, bucket: number) =>
      db.prepare<SeriesArgs>(sql`SELECT (minute / ${raw(String(bucket))}) * ${raw(String(bucket))} AS start, channel,
          SUM(succeeded) AS succeeded, SUM(refused) AS refused
        FROM ${raw(table)}
        WHERE credential_id = ${param('credentialId')} AND minute >= ${param('from')} AND minute < ${param('to')}
        GROUP BY (minute / ${raw(String(bucket))}) * ${raw(String(bucket))}, channel
        ORDER BY start, channel`);
    this.series = {
      minute: seriesOf(minutes.table, BUCKET_MINUTES.minute),
      hour: seriesOf(hours.table, BUCKET_MINUTES.hour),
      day: seriesOf(hours.table, BUCKET_MINUTES.day),
    };

    // Whole hours from the hours, the minutes before the first whole hour and after the last from the minutes: at most
    // two hours of minute rows per credential, whatever the range.
    const organization = sql`organization_id = ${param('organizationId')}`;
    const part = (table: string, from: string, to: string) =>
      sql`SELECT credential_kind, credential_id, succeeded, refused FROM ${raw(table)}
        WHERE ${organization} AND minute >= ${param(from)} AND minute < ${param(to)}`;
    this.top = db.prepare<TopArgs>(sql`SELECT credential_kind, credential_id,
        SUM(succeeded) AS succeeded, SUM(refused) AS refused
      FROM (${part(hours.table, 'hoursFrom', 'hoursTo')}
        UNION ALL ${part(minutes.table, 'from', 'hoursFrom')}
        UNION ALL ${part(minutes.table, 'hoursTo', 'to')}) u
      GROUP BY credential_kind, credential_id
      ORDER BY SUM(succeeded) + SUM(refused) DESC, credential_id
      LIMIT ${param('limit')}`);

    // SKIP LOCKED: concurrent pruners delete different rows (docs/operations.md#retention).
    const prune = (table: string) =>
      db.prepare<PruneArgs>(sql`DELETE FROM ${raw(table)} WHERE (credential_id, minute, channel) IN (
        SELECT credential_id, minute, channel FROM ${raw(table)} WHERE minute < ${param('cutoff')}
        ORDER BY minute LIMIT ${param('limit')} ${db.skipLocked})`);
    this.prunes = { minutes: prune(minutes.table), hours: prune(hours.table) };
  }

  /** Adds the counts inside `tx`: each row to its minute's, and to its hour's. */
  async add(rows: readonly UsageRecord[], tx: Transaction): Promise<void> {
    for (let start = 0; start < rows.length; start += UPSERT_CHUNK) {
      await this.db.run(tx, this.upserts.minutes, { rows: rows.slice(start, start + UPSERT_CHUNK) });
    }
    const hours = rollUp(rows);
    for (let start = 0; start < hours.length; start += UPSERT_CHUNK) {
      await this.db.run(tx, this.upserts.hours, { rows: hours.slice(start, start + UPSERT_CHUNK) });
    }
  }

  /** The credential's non-empty buckets in [from, to) (minutes since the epoch, whole buckets), by channel. */
  async seriesOf(credentialId: string, granularity: Granularity, from: number, to: number): Promise<UsageBucketRow[]> {
    const rows = await this.db.rows<Record<keyof UsageBucketRow, number | string>, SeriesArgs>(
      this.series[granularity],
      { credentialId, from, to },
    );
    return rows.map((row) => ({
      start: Number(row.start),
      channel: row.channel as UsageChannel,
      succeeded: Number(row.succeeded),
      refused: Number(row.refused),
    }));
  }

  /** The organization's `limit` credentials with the most uses in [from, to) (minutes since the epoch), most first. */
  async busiest(organizationId: string, from: number, to: number, limit: number): Promise<UsageTotalRow[]> {
    let hoursFrom = Math.ceil(from / 60) * 60;
    let hoursTo = Math.floor(to / 60) * 60;
    // Within one hour: the minutes alone.
    if (hoursFrom >= hoursTo) [hoursFrom, hoursTo] = [to, to];
    const rows = await this.db.rows<Record<string, string | number>, TopArgs>(this.top, {
      organizationId,
      from,
      hoursFrom,
      hoursTo,
      to,
      limit,
    });
    return rows.map((row) => ({
      kind: String(row.credential_kind),
      credentialId: String(row.credential_id),
      succeeded: Number(row.succeeded),
      refused: Number(row.refused),
    }));
  }

  /** Deletes at most `limit` minute rows before `cutoff`, or the hour rows of the hours before its hour. */
  deleteOlderThan(table: 'minutes' | 'hours', cutoff: number, limit: number): Promise<number> {
    const before = table === 'hours' ? Math.floor(cutoff / 60) * 60 : cutoff;
    return this.db.affected(this.dataSource.manager, this.prunes[table], { cutoff: before, limit });
  }
}

/** The rows summed per hour (one row per credential, hour and channel, as the upsert needs). */
function rollUp(rows: readonly UsageRecord[]): UsageRecord[] {
  const hours = new Map<string, UsageRecord>();
  for (const row of rows) {
    const minute = Math.floor(row.minute / 60) * 60;
    const key = `${row.credential_id} ${minute} ${row.channel}`;
    const known = hours.get(key);
    if (known === undefined) hours.set(key, { ...row, minute });
    else {
      known.succeeded += row.succeeded;
      known.refused += row.refused;
    }
  }
  return [...hours.values()];
}
