import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { Dialect, sql, Statement } from '../../database/sql';
import type { KeyUse } from './key-use';

/** Keys one UPDATE of the usage fields writes at most. */
const LAST_USED_CHUNK = 500;

/** The usage fields of api_keys (docs/api.md#usage-fields): written in batches by LastUsedRecorder. */
interface UseRecord {
  id: string;
  at: string;
  ip: string | null;
  user_agent: string | null;
}

@Injectable()
export class KeyUsageRepository {
  private readonly db: Dialect;
  private readonly lastUsed: Statement<{ uses: UseRecord[] }>;

  constructor(@InjectDataSource() private readonly dataSource: DataSource) {
    this.db = Dialect.of(dataSource);
    // The uses as one JSON array (timestamps as ISO 8601 text, which SQLite compares as text). Written together,
    // and only by a later use.
    const uses = this.db.jsonRecords('uses', 'u', [
      ['id', 'uuid'],
      ['at', 'timestamptz'],
      ['ip', 'varchar'],
      ['user_agent', 'varchar'],
    ]);
    this.lastUsed = this.db.prepare(sql`UPDATE api_keys
      SET last_used_at = u.at, last_used_ip = u.ip, last_used_user_agent = u.user_agent
      FROM ${uses}
      WHERE api_keys.id = u.id AND (api_keys.last_used_at IS NULL OR api_keys.last_used_at < u.at)`);
  }

  /** Sets each key's usage fields to its use unless the stored one is as late or later (LAST_USED_CHUNK a statement). */
  async recordLastUsed(uses: ReadonlyArray<readonly [id: string, use: KeyUse]>): Promise<void> {
    for (let start = 0; start < uses.length; start += LAST_USED_CHUNK) {
      const chunk = uses.slice(start, start + LAST_USED_CHUNK);
      const records = chunk.map(([id, use]) => ({
        id,
        at: use.at.toISOString(),
        ip: use.ip,
        user_agent: use.userAgent,
      }));
      await this.db.run(this.dataSource.manager, this.lastUsed, { uses: records });
    }
  }
}
