import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { Dialect, param, sql, Statement } from '../../database/sql';
import type { Transaction } from '../../database/unit-of-work';
import { keyListSql } from '../api-keys.repository';
import { KeyPage, KeyPageQuery, ListRow, OwnerIds, page, PageArgs, toPage } from '../key-rows';

type OrganizationListArgs = { organizationId: string } & PageArgs;
type RevokeAllArgs = OwnerIds & { at: string };
type RevokeArgs = { organizationId: string; id: string; at: string };

/** The organization's keys, every owner's (docs/api.md#organization-key-management). */
@Injectable()
export class OrganizationKeysRepository {
  private readonly db: Dialect;
  private readonly list: { active: Statement<OrganizationListArgs>; all: Statement<OrganizationListArgs> };
  private readonly revokeAll: Statement<RevokeAllArgs>;
  private readonly revokeOne: Statement<RevokeArgs>;

  constructor(@InjectDataSource() dataSource: DataSource) {
    const db = Dialect.of(dataSource);
    this.db = db;
    // The active keys from api_keys_org_active, all from api_keys_org_newest (migration 1764810000000), in list
    // order, the count's window ordered as the page: at most the window however large the organization
    // (docs/adr/0010-data-access-repositories.md).
    const organization = sql`organization_id = ${param('organizationId')}`;
    const newest = 'ORDER BY created_at DESC, id DESC';
    this.list = {
      active: db.prepare(
        keyListSql(sql`${organization} AND status = 'ACTIVE'`, db.table('api_keys', 'api_keys_org_active'), newest),
      ),
      all: db.prepare(keyListSql(organization, db.table('api_keys', 'api_keys_org_newest'), newest)),
    };
    this.revokeAll = db.prepare(
      db.returning(
        sql`UPDATE api_keys SET status = 'REVOKED', revoked_at = ${param('at')}, updated_at = ${param('at')}
          WHERE user_id = ${param('userId')} AND organization_id = ${param('organizationId')} AND status = 'ACTIVE'
          RETURNING id`,
        'id',
      ),
    );
    this.revokeOne = db.prepare(sql`UPDATE api_keys
      SET status = 'REVOKED', revoked_at = ${param('at')}, updated_at = ${param('at')}
      WHERE id = ${param('id')} AND organization_id = ${param('organizationId')} AND status = 'ACTIVE'`);
  }

  /** A page of the organization's keys, newest first (created_at, then id, descending), and their count in the window. */
  async findPageByOrganization(organizationId: string, query: KeyPageQuery): Promise<KeyPage> {
    const statement = query.includeRevoked ? this.list.all : this.list.active;
    return toPage(await this.db.rows<ListRow, OrganizationListArgs>(statement, { organizationId, ...page(query) }));
  }

  /** Marks the organization's ACTIVE key REVOKED, whoever owns it; false when there was no such key. */
  async revokeInOrganization(organizationId: string, id: string, at: Date, tx: Transaction): Promise<boolean> {
    return (await this.db.affected(tx, this.revokeOne, { organizationId, id, at: at.toISOString() })) > 0;
  }

  /**
   * Marks every ACTIVE key of the owner REVOKED (expired ones too) in one statement inside `tx`, which holds the
   * owner's lock (ApiKeysRepository.lockOwner): the ids of the keys it revoked.
   */
  async revokeAllOf(owner: OwnerIds, at: Date, tx: Transaction): Promise<string[]> {
    const rows = await this.db.run<{ id: string }, RevokeAllArgs>(tx, this.revokeAll, {
      at: at.toISOString(),
      userId: owner.userId,
      organizationId: owner.organizationId,
    });
    return rows.map((row) => row.id);
  }
}
