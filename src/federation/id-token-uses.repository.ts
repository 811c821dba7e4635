import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { Dialect, param, raw, sql, Statement } from '../database/sql';

/** How many expired uses one DELETE removes at most: a short statement, repeated until none is left. */
export const PRUNE_BATCH_SIZE = 1000;

/** Every query on id_token_uses (docs/federation.md#people-id-tokens). */
@Injectable()
export class IdTokenUsesRepository {
  private readonly db: Dialect;
  private readonly insertUse: Statement<{ tokenKey: string; expiresAt: string }>;
  private readonly pruneBatch: Statement<{ before: string }>;

  constructor(@InjectDataSource() private readonly dataSource: DataSource) {
    const db = Dialect.of(dataSource);
    this.db = db;
    // The primary key decides, on any instance: of two exchanges of one token, one inserts the row, the other nothing.
    this.insertUse = db.prepare(sql`INSERT INTO id_token_uses (token_key, expires_at)
      VALUES (${param('tokenKey')}, ${param('expiresAt')}) ON CONFLICT (token_key) DO NOTHING RETURNING token_key`);
    this.pruneBatch = db.prepare(sql`DELETE FROM id_token_uses WHERE token_key IN (
      SELECT token_key FROM id_token_uses WHERE expires_at < ${param('before')} LIMIT ${raw(String(PRUNE_BATCH_SIZE))})`);
  }

  /** True when the use is recorded now; false when a use of that key was recorded before (by any instance). */
  async insert(tokenKey: string, expiresAt: Date): Promise<boolean> {
    const rows = await this.db.rows<{ token_key: string }, { tokenKey: string; expiresAt: string }>(this.insertUse, {
      tokenKey,
      expiresAt: expiresAt.toISOString(),
    });
    return rows.length === 1;
  }

  /** Deletes up to PRUNE_BATCH_SIZE uses that expired before `before`; how many it deleted. */
  pruneExpired(before: Date): Promise<number> {
    return this.db.affected(this.dataSource.manager, this.pruneBatch, { before: before.toISOString() });
  }
}
