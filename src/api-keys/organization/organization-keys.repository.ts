import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { placeholders, rowReader, RowReader } from '../../database/sql';
import type { Transaction } from '../../database/unit-of-work';
import { ApiKey } from '../api-key.entity';
import { KeyPage, KeyPageQuery, keyListSql, ListRow, OwnerIds, toPage } from '../key-rows';

/** The organization's keys, every owner's (docs/api.md#organization-key-management). */
@Injectable()
export class OrganizationKeysRepository {
  private readonly read: RowReader;
  private readonly listSql: { active: string; all: string };
  private readonly revokeAllSql: string;

  constructor(@InjectDataSource() dataSource: DataSource) {
    this.read = rowReader(dataSource);
    const p = placeholders(dataSource);
    const postgres = dataSource.options.type === 'postgres';
    // The active keys from api_keys_org_active, all from api_keys_org_newest (migration 1764810000000), in list
    // order, the count's window ordered as the page: at most the window however large the organization
    // (docs/adr/0010-data-access-repositories.md). SQLite, which has no statistics, is told which index.
    const organization = (condition: string) => (first: number) => `organization_id = ${p(first)} ${condition}`;
    const table = (index: string): string => (postgres ? 'api_keys' : `api_keys INDEXED BY ${index}`);
    const newest = 'ORDER BY created_at DESC, id DESC';
    this.listSql = {
      active: keyListSql(p, organization("AND status = 'ACTIVE'"), 1, table('api_keys_org_active'), newest),
      all: keyListSql(p, organization(''), 1, table('api_keys_org_newest'), newest),
    };
    // PostgreSQL answers an UPDATE ... RETURNING through TypeORM as [rows, count]; as a CTE it is a SELECT.
    const revokeAll = `UPDATE api_keys SET status = 'REVOKED', revoked_at = ${p(1)}, updated_at = ${p(2)}
      WHERE user_id = ${p(3)} AND organization_id = ${p(4)} AND status = 'ACTIVE' RETURNING id`;
    this.revokeAllSql = postgres ? `WITH revoked AS (${revokeAll}) SELECT id FROM revoked` : revokeAll;
  }

  /** A page of the organization's keys, newest first (created_at, then id, descending), and their count in the window. */
  async findPageByOrganization(organizationId: string, query: KeyPageQuery): Promise<KeyPage> {
    const sql = query.includeRevoked ? this.listSql.all : this.listSql.active;
    return toPage(await this.read<ListRow>(sql, [organizationId, organizationId, query.limit, query.offset]));
  }

  /** Marks the organization's ACTIVE key REVOKED, whoever owns it; false when there was no such key. */
  async revokeInOrganization(organizationId: string, id: string, at: Date, tx: Transaction): Promise<boolean> {
    const result = await tx
      .getRepository(ApiKey)
      .createQueryBuilder()
      .update(ApiKey)
      .set({ status: 'REVOKED', revokedAt: at, updatedAt: at })
      .where("id = :id AND organization_id = :organizationId AND status = 'ACTIVE'", { id, organizationId })
      .execute();
    return (result.affected ?? 0) > 0;
  }

  /**
   * Marks every ACTIVE key of the owner REVOKED (expired ones too) in one statement inside `tx`, which holds the
   * owner's lock (ApiKeysRepository.lockOwner): the ids of the keys it revoked.
   */
  async revokeAllOf(owner: OwnerIds, at: Date, tx: Transaction): Promise<string[]> {
    const when = at.toISOString();
    const rows = await tx.query<Array<{ id: string }>>(this.revokeAllSql, [
      when,
      when,
      owner.userId,
      owner.organizationId,
    ]);
    return rows.map((row) => row.id);
  }
}
