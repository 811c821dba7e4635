import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { EntityRows, RawRow } from '../database/entity-rows';
import { batchedByKey } from '../database/batch-loader';
import { Dialect, join, param, raw, sql, Statement } from '../database/sql';
import type { Transaction } from '../database/unit-of-work';
import { IssuerKind, TrustedIssuer } from './trusted-issuer.entity';

/** The columns of a people issuer's settings (TrustedIssuersService.savePeople). */
const PEOPLE_SETTINGS = [
  'issuer',
  'audience',
  'client_id',
  'client_secret_encrypted',
  'token_endpoint_auth',
  'email_domains',
  'allowed_origins',
  'jit_role',
];

/** Every query on trusted_issuers (docs/federation.md#trusted-issuers). */
@Injectable()
export class TrustedIssuersRepository {
  private readonly db: Dialect;
  private readonly insertIssuer: Statement<RawRow>;
  /** trusted_issuers as TrustedIssuer describes it. */
  private readonly rows: EntityRows<TrustedIssuer>;
  private readonly byOrganization: Statement<{ organizationId: string }>;
  private readonly byId: Statement<{ id: string }>;
  /** Every token exchange reads its issuer's entries: batched per event-loop turn, as the key look-ups are. */
  private readonly byIssuer: (issuer: string) => Promise<TrustedIssuer[]>;
  private readonly peopleElsewhere: Statement<{ issuer: string; organizationId: string }>;
  private readonly peopleOfOrganization: Statement<{ organizationId: string }>;
  private readonly held: Statement<{ organizationId: string; id: string }>;
  private readonly sameEntry: Statement<{ organizationId: string; issuer: string; kind: IssuerKind }>;
  private readonly deleteById: Statement<{ id: string }>;
  private readonly originsById: Statement<{ id: string; allowedOrigins: string }>;
  private readonly peopleById: Statement<RawRow>;

  constructor(@InjectDataSource() dataSource: DataSource) {
    const db = Dialect.of(dataSource);
    this.db = db;
    const rows = EntityRows.of(dataSource, TrustedIssuer);
    this.rows = rows;
    const COLUMNS = raw(rows.columns);
    // Every column, each bound from the entity's record (EntityRows.toRecord).
    this.insertIssuer = db.prepare(sql`INSERT INTO trusted_issuers (${COLUMNS})
      VALUES (${join(
        rows.columnNames.map((column) => sql`${param(column)}`),
        ', ',
      )})`);
    this.byOrganization = db.prepare(sql`SELECT ${COLUMNS} FROM trusted_issuers
      WHERE organization_id = ${param('organizationId')} ORDER BY created_at, id`);
    this.byId = db.prepare(sql`SELECT ${COLUMNS} FROM trusted_issuers WHERE id = ${param('id')}`);
    const byIssuers = db.prepare<{ issuers: string[] }>(sql`SELECT ${COLUMNS} FROM trusted_issuers
      WHERE ${db.textIn('issuer', 'issuers')} ORDER BY created_at, id`);
    this.byIssuer = batchedByKey(async (issuers) => {
      const found = new Map<string, TrustedIssuer[]>();
      for (const row of await db.rows<RawRow, { issuers: string[] }>(byIssuers, { issuers })) {
        const entry = rows.toEntity(row);
        found.set(entry.issuer, [...(found.get(entry.issuer) ?? []), entry]);
      }
      return found;
    }, []);
    this.peopleElsewhere = db.prepare(sql`SELECT organization_id FROM trusted_issuers
      WHERE issuer = ${param('issuer')} AND kind = 'people' AND organization_id <> ${param('organizationId')}`);
    this.peopleOfOrganization = db.prepare(sql`SELECT ${COLUMNS} FROM trusted_issuers
      WHERE organization_id = ${param('organizationId')} AND kind = 'people' ORDER BY created_at, id LIMIT 1`);
    this.held = db.prepare(sql`SELECT id FROM trusted_issuers
      WHERE id = ${param('id')} AND organization_id = ${param('organizationId')} ${db.forShare}`);
    this.sameEntry = db.prepare(sql`SELECT id FROM trusted_issuers
      WHERE organization_id = ${param('organizationId')} AND issuer = ${param('issuer')} AND kind = ${param('kind')}`);
    this.originsById = db.prepare(sql`UPDATE trusted_issuers SET allowed_origins = ${param('allowedOrigins')}
      WHERE id = ${param('id')}`);
    // A people issuer's settings, changed in the console (the id, organization, kind and creation stay).
    this.peopleById = db.prepare(
      sql`UPDATE trusted_issuers SET ${join(
        PEOPLE_SETTINGS.map((column) => sql`${raw(column)} = ${param(column)}`),
        ', ',
      )} WHERE id = ${param('id')} AND kind = 'people'`,
    );
    this.deleteById = db.prepare(
      db.returning(sql`DELETE FROM trusted_issuers WHERE id = ${param('id')} RETURNING ${COLUMNS}`, '*'),
    );
  }

  async insert(entry: TrustedIssuer, tx: Transaction): Promise<void> {
    await this.db.run(tx, this.insertIssuer, this.rows.toRecord(entry));
  }

  async findByOrganization(organizationId: string): Promise<TrustedIssuer[]> {
    return (await this.db.rows<RawRow, { organizationId: string }>(this.byOrganization, { organizationId })).map(
      this.rows.toEntity,
    );
  }

  async findById(id: string): Promise<TrustedIssuer | null> {
    const rows = await this.db.rows<RawRow, { id: string }>(this.byId, { id });
    return rows[0] === undefined ? null : this.rows.toEntity(rows[0]);
  }

  /** The entries a token's `iss` names, of one kind (one organization's for people, any number for workloads). */
  async findByIssuer(issuer: string, kind: IssuerKind): Promise<TrustedIssuer[]> {
    return (await this.byIssuer(issuer)).filter((entry) => entry.kind === kind);
  }

  /** The organization that already has this issuer for its people, other than `organizationId`; null if none. */
  async peopleOrganizationOf(issuer: string, organizationId: string): Promise<string | null> {
    const rows = await this.db.rows<{ organization_id: string }, { issuer: string; organizationId: string }>(
      this.peopleElsewhere,
      { issuer, organizationId },
    );
    return rows[0]?.organization_id ?? null;
  }

  /** The organization's people issuer (trusted_issuers_people_per_organization: one at most); null if none. */
  async peopleIssuerOf(organizationId: string): Promise<TrustedIssuer | null> {
    const rows = await this.db.rows<RawRow, { organizationId: string }>(this.peopleOfOrganization, {
      organizationId,
    });
    return rows[0] === undefined ? null : this.rows.toEntity(rows[0]);
  }

  /**
   * Whether the organization's entry exists, read inside `tx` and held until it ends (PostgreSQL: FOR SHARE; SQLite
   * has one writer): its deletion waits for `tx`, or came first and is seen here.
   */
  async hold(organizationId: string, id: string, tx: Transaction): Promise<boolean> {
    return (
      (await this.db.run<{ id: string }, { organizationId: string; id: string }>(tx, this.held, { organizationId, id }))
        .length > 0
    );
  }

  async exists(organizationId: string, issuer: string, kind: IssuerKind): Promise<boolean> {
    const rows = await this.db.rows<{ id: string }, { organizationId: string; issuer: string; kind: IssuerKind }>(
      this.sameEntry,
      { organizationId, issuer, kind },
    );
    return rows.length > 0;
  }

  /** Whether the entry existed and now has these allowed origins. */
  async setAllowedOrigins(id: string, allowedOrigins: readonly string[], tx: Transaction): Promise<boolean> {
    return (await this.db.affected(tx, this.originsById, { id, allowedOrigins: JSON.stringify(allowedOrigins) })) > 0;
  }

  /** Whether the people entry existed and now has the settings of `entry` (same id). */
  async updatePeople(entry: TrustedIssuer, tx: Transaction): Promise<boolean> {
    return (await this.db.affected(tx, this.peopleById, this.rows.toRecord(entry))) > 0;
  }

  /** Deletes the entry and returns it as it was; null when there is none. */
  async delete(id: string, tx: Transaction): Promise<TrustedIssuer | null> {
    const rows = await this.db.run<RawRow, { id: string }>(tx, this.deleteById, { id });
    return rows[0] === undefined ? null : this.rows.toEntity(rows[0]);
  }
}
