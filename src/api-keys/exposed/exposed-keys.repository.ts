import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { idListCondition, placeholders, rowReader, RowReader } from '../../database/sql';
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
  private readonly read: RowReader;
  private readonly findSql: string;
  private readonly revokeSql: string;
  private readonly bindIds: (ids: readonly string[]) => unknown;

  constructor(@InjectDataSource() dataSource: DataSource) {
    this.read = rowReader(dataSource);
    const p = placeholders(dataSource);
    const findIds = idListCondition(dataSource, 'id', 1);
    const revokeIds = idListCondition(dataSource, 'id', 3);
    const update = `UPDATE api_keys SET status = 'REVOKED', revoked_at = ${p(1)}, updated_at = ${p(2)}
      WHERE ${revokeIds.sql} AND status = 'ACTIVE' RETURNING id, organization_id`;
    this.findSql = `SELECT id, organization_id, secret_hash, status FROM api_keys WHERE ${findIds.sql}`;
    // PostgreSQL answers an UPDATE ... RETURNING through TypeORM as [rows, count]; as a CTE it is a SELECT.
    this.revokeSql =
      dataSource.options.type === 'postgres'
        ? `WITH revoked AS (${update}) SELECT id, organization_id FROM revoked`
        : update;
    this.bindIds = (ids) => findIds.bind(ids);
  }

  /** The keys with these ids, whoever owns them, with what a report compares: one query for the whole report. */
  async findSecretsByIds(ids: readonly string[]): Promise<ExposableKey[]> {
    if (ids.length === 0) return [];
    const rows = await this.read<{ id: string; organization_id: string; secret_hash: string; status: ApiKeyStatus }>(
      this.findSql,
      [this.bindIds(ids)],
    );
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
    const when = at.toISOString();
    const rows = await tx.query<Array<{ id: string; organization_id: string }>>(this.revokeSql, [
      when,
      when,
      this.bindIds(ids),
    ]);
    return rows.map((row) => ({ id: row.id, organizationId: row.organization_id }));
  }
}
