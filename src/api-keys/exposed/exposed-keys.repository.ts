import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { Dialect, param, sql, Statement } from '../../database/sql';
import type { Transaction } from '../../database/unit-of-work';
import type { ApiKeyStatus } from '../api-key.entity';

/** What a report of exposed keys reads of a key: never its label or owner's details. */
export interface ExposableKey {
  id: string;
  organizationId: string;
  secretHash: string;
  status: ApiKeyStatus;
}

/** The two statements of a report of exposed keys (docs/api.md#post-v1api-keysexposed), on the primary key. */
@Injectable()
export class ExposedKeysRepository {
  private readonly db: Dialect;
  private readonly find: Statement<{ ids: readonly string[] }>;
  private readonly revoke: Statement<{ ids: readonly string[]; at: string }>;

  constructor(@InjectDataSource() dataSource: DataSource) {
    const db = Dialect.of(dataSource);
    this.db = db;
    this.find = db.prepare(
      sql`SELECT id, organization_id, secret_hash, status FROM api_keys WHERE ${db.idIn('id', 'ids')}`,
    );
    this.revoke = db.prepare(
      db.returning(
        sql`UPDATE api_keys SET status = 'REVOKED', revoked_at = ${param('at')}, updated_at = ${param('at')}
          WHERE ${db.idIn('id', 'ids')} AND status = 'ACTIVE' RETURNING id, organization_id`,
        'id, organization_id',
      ),
    );
  }

  /** The keys with these ids, whoever owns them, with what a report compares: one query for the whole report. */
  async findSecretsByIds(ids: readonly string[]): Promise<ExposableKey[]> {
    if (ids.length === 0) return [];
    const rows = await this.db.rows<
      { id: string; organization_id: string; secret_hash: string; status: ApiKeyStatus },
      { ids: readonly string[] }
    >(this.find, { ids });
    return rows.map((row) => ({
      id: row.id,
      organizationId: row.organization_id,
      secretHash: row.secret_hash,
      status: row.status,
    }));
  }

  /**
   * Marks those of these keys that are still ACTIVE REVOKED, in one statement inside `tx`, and returns the ones it
   * changed: a key revoked meanwhile is not among them, so that each revocation is recorded once.
   */
  async revokeExposed(
    ids: readonly string[],
    at: Date,
    tx: Transaction,
  ): Promise<Array<Pick<ExposableKey, 'id' | 'organizationId'>>> {
    const rows = await this.db.run<{ id: string; organization_id: string }, { ids: readonly string[]; at: string }>(
      tx,
      this.revoke,
      { ids, at: at.toISOString() },
    );
    return rows.map((row) => ({ id: row.id, organizationId: row.organization_id }));
  }
}
