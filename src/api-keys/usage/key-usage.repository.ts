import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { placeholders } from '../../database/sql';
import type { KeyUse } from './key-use';

/** Keys one UPDATE of the usage fields writes at most. */
const LAST_USED_CHUNK = 500;

/** The usage fields of api_keys (docs/api.md#usage-fields): written in batches by LastUsedRecorder. */
@Injectable()
export class KeyUsageRepository {
  private readonly postgres: boolean;
  private readonly lastUsedSql: string;

  constructor(@InjectDataSource() private readonly dataSource: DataSource) {
    this.postgres = dataSource.options.type === 'postgres';
    const p = placeholders(dataSource);
    // The uses as arrays, one per field (PostgreSQL), or one JSON array of [id, time, address, user agent] (SQLite,
    // whose timestamps are ISO 8601 text and compare as text). Written together, and only by a later use.
    this.lastUsedSql = this.postgres
      ? `UPDATE api_keys AS k SET last_used_at = u.at, last_used_ip = u.ip, last_used_user_agent = u.user_agent
         FROM unnest(${p(1)}::uuid[], ${p(2)}::timestamptz[], ${p(3)}::varchar[], ${p(4)}::varchar[])
           AS u(id, at, ip, user_agent)
         WHERE k.id = u.id AND (k.last_used_at IS NULL OR k.last_used_at < u.at)`
      : `UPDATE api_keys SET last_used_at = u.at, last_used_ip = u.ip, last_used_user_agent = u.user_agent
         FROM (SELECT value ->> 0 AS id, value ->> 1 AS at, value ->> 2 AS ip, value ->> 3 AS user_agent
               FROM json_each(${p(1)})) AS u
         WHERE api_keys.id = u.id AND (api_keys.last_used_at IS NULL OR api_keys.last_used_at < u.at)`;
  }

  /** Sets each key's usage fields to its use unless the stored one is as late or later (LAST_USED_CHUNK a statement). */
  async recordLastUsed(uses: ReadonlyArray<readonly [id: string, use: KeyUse]>): Promise<void> {
    for (let start = 0; start < uses.length; start += LAST_USED_CHUNK) {
      const chunk = uses.slice(start, start + LAST_USED_CHUNK);
      await this.dataSource.query(
        this.lastUsedSql,
        this.postgres
          ? [
              chunk.map(([id]) => id),
              chunk.map(([, use]) => use.at.toISOString()),
              chunk.map(([, use]) => use.ip),
              chunk.map(([, use]) => use.userAgent),
            ]
          : [JSON.stringify(chunk.map(([id, use]) => [id, use.at.toISOString(), use.ip, use.userAgent]))],
      );
    }
  }
}
