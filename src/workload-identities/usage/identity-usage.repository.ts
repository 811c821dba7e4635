import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { Dialect, sql, Statement } from '../../database/sql';

/** One exchange through an identity, as its usage fields keep it: `last_used_at` and `last_used_ip` together. */
export interface IdentityUse {
  at: Date;
  /** The client address as the failure limiter sees it; null when unknown. */
  ip: string | null;
}

/** Identities one UPDATE of the usage fields writes at most. */
const LAST_USED_CHUNK = 500;

interface UseRecord {
  id: string;
  at: string;
  ip: string | null;
}

/** The usage fields of workload_identities: written in batches by IdentityUseRecorder. */
@Injectable()
export class IdentityUsageRepository {
  private readonly db: Dialect;
  private readonly lastUsed: Statement<{ uses: UseRecord[] }>;

  constructor(@InjectDataSource() private readonly dataSource: DataSource) {
    this.db = Dialect.of(dataSource);
    // As the keys' usage fields (api-keys/usage/key-usage.repository.ts): one JSON array, written only by a later use.
    const uses = this.db.jsonRecords('uses', 'u', [
      ['id', 'uuid'],
      ['at', 'timestamptz'],
      ['ip', 'varchar'],
    ]);
    this.lastUsed = this.db.prepare(sql`UPDATE workload_identities
      SET last_used_at = u.at, last_used_ip = u.ip
      FROM ${uses}
      WHERE workload_identities.id = u.id
        AND (workload_identities.last_used_at IS NULL OR workload_identities.last_used_at < u.at)`);
  }

  /** Sets each identity's usage fields to its use unless the stored one is as late or later. */
  async recordLastUsed(uses: ReadonlyArray<readonly [id: string, use: IdentityUse]>): Promise<void> {
    for (let start = 0; start < uses.length; start += LAST_USED_CHUNK) {
      const records = uses
        .slice(start, start + LAST_USED_CHUNK)
        .map(([id, use]) => ({ id, at: use.at.toISOString(), ip: use.ip }));
      await this.db.run(this.dataSource.manager, this.lastUsed, { uses: records });
    }
  }
}
