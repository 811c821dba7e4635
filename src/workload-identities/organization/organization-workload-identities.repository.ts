import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { Dialect, param, sql, Statement } from '../../database/sql';
import type { Transaction } from '../../database/unit-of-work';
import { identityListSql } from '../workload-identities.repository';
import { IdentityPage, IdentityPageQuery, ListRow, OwnerIds, PageArgs, toPage } from '../workload-identity-rows';

type OrganizationListArgs = { organizationId: string } & PageArgs;
type RevokeAllArgs = OwnerIds & { at: string };
type RevokeArgs = { organizationId: string; id: string; at: string };
type RevokeTrustingArgs = { organizationId: string; trustedIssuerId: string; at: string };

/** The organization's workload identities, every owner's (docs/workload-identities.md#organization-admins). */
@Injectable()
export class OrganizationWorkloadIdentitiesRepository {
  private readonly db: Dialect;
  private readonly list: { active: Statement<OrganizationListArgs>; all: Statement<OrganizationListArgs> };
  private readonly revokeAll: Statement<RevokeAllArgs>;
  private readonly revokeOne: Statement<RevokeArgs>;
  private readonly revokeTrusting: Statement<RevokeTrustingArgs>;

  constructor(@InjectDataSource() dataSource: DataSource) {
    const db = Dialect.of(dataSource);
    this.db = db;
    // In list order from workload_identities_org_newest, the count's window ordered as the page: at most the window
    // however large the organization (as the organization's keys).
    const organization = sql`organization_id = ${param('organizationId')}`;
    const newest = 'ORDER BY created_at DESC, id DESC';
    const from = db.table('workload_identities', 'workload_identities_org_newest');
    this.list = {
      active: db.prepare(identityListSql(sql`${organization} AND status = 'ACTIVE'`, from, newest)),
      all: db.prepare(identityListSql(organization, from, newest)),
    };
    this.revokeAll = db.prepare(
      db.returning(
        sql`UPDATE workload_identities SET status = 'REVOKED', revoked_at = ${param('at')}, updated_at = ${param('at')}
          WHERE user_id = ${param('userId')} AND organization_id = ${param('organizationId')} AND status = 'ACTIVE'
          RETURNING id`,
        'id',
      ),
    );
    this.revokeOne = db.prepare(sql`UPDATE workload_identities
      SET status = 'REVOKED', revoked_at = ${param('at')}, updated_at = ${param('at')}
      WHERE id = ${param('id')} AND organization_id = ${param('organizationId')} AND status = 'ACTIVE'`);
    // Through workload_identities_match (trusted_issuer_id first, ACTIVE rows only).
    this.revokeTrusting = db.prepare(
      db.returning(
        sql`UPDATE workload_identities SET status = 'REVOKED', revoked_at = ${param('at')}, updated_at = ${param('at')}
          WHERE trusted_issuer_id = ${param('trustedIssuerId')} AND organization_id = ${param('organizationId')}
            AND status = 'ACTIVE'
          RETURNING id`,
        'id',
      ),
    );
  }

  /** A page of the organization's identities, newest first, and their count in the window. */
  async findPageByOrganization(organizationId: string, query: IdentityPageQuery): Promise<IdentityPage> {
    const statement = query.includeRevoked ? this.list.all : this.list.active;
    const args = { organizationId, limit: query.limit, offset: query.offset };
    return toPage(await this.db.rows<ListRow, OrganizationListArgs>(statement, args));
  }

  /** Marks the organization's ACTIVE identity REVOKED, whoever owns it; false when there was no such identity. */
  async revokeInOrganization(organizationId: string, id: string, at: Date, tx: Transaction): Promise<boolean> {
    return (await this.db.affected(tx, this.revokeOne, { organizationId, id, at: at.toISOString() })) > 0;
  }

  /** Marks every ACTIVE identity of the owner REVOKED (expired ones too) in one statement: the ids it revoked. */
  async revokeAllOf(owner: OwnerIds, at: Date, tx: Transaction): Promise<string[]> {
    const rows = await this.db.run<{ id: string }, RevokeAllArgs>(tx, this.revokeAll, {
      at: at.toISOString(),
      userId: owner.userId,
      organizationId: owner.organizationId,
    });
    return rows.map((row) => row.id);
  }

  /** Marks every ACTIVE identity that names the trusted issuer REVOKED (expired ones too): the ids it revoked. */
  async revokeAllTrusting(
    issuer: { id: string; organizationId: string },
    at: Date,
    tx: Transaction,
  ): Promise<string[]> {
    const rows = await this.db.run<{ id: string }, RevokeTrustingArgs>(tx, this.revokeTrusting, {
      at: at.toISOString(),
      trustedIssuerId: issuer.id,
      organizationId: issuer.organizationId,
    });
    return rows.map((row) => row.id);
  }
}
