import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { toDate } from '../database/columns';
import { batchedByKey } from '../database/batch-loader';
import { Dialect, param, sql, Statement } from '../database/sql';
import type { Transaction } from '../database/unit-of-work';
import type { Role } from '../identity/roles';
import { IssuerKind, TokenEndpointAuthMethod, TrustedIssuer } from './trusted-issuer.entity';

interface TrustedIssuerRow {
  id: string;
  organization_id: string;
  issuer: string;
  kind: IssuerKind;
  audience: string;
  client_id: string | null;
  client_secret_encrypted: string | null;
  token_endpoint_auth: TokenEndpointAuthMethod | null;
  email_domains: string;
  allowed_origins: string;
  jit_role: Role | null;
  created_at: Date | string;
}

const COLUMNS = sql`id, organization_id, issuer, kind, audience, client_id, client_secret_encrypted,
  token_endpoint_auth, email_domains, allowed_origins, jit_role, created_at`;

type InsertArgs = Omit<TrustedIssuerRow, 'created_at'> & { created_at: string };

/** Every query on trusted_issuers (docs/federation.md#trusted-issuers). */
@Injectable()
export class TrustedIssuersRepository {
  private readonly db: Dialect;
  private readonly insertIssuer: Statement<InsertArgs>;
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

  constructor(@InjectDataSource() dataSource: DataSource) {
    const db = Dialect.of(dataSource);
    this.db = db;
    this.insertIssuer = db.prepare(sql`INSERT INTO trusted_issuers (${COLUMNS})
      VALUES (${param('id')}, ${param('organization_id')}, ${param('issuer')}, ${param('kind')}, ${param('audience')},
        ${param('client_id')}, ${param('client_secret_encrypted')}, ${param('token_endpoint_auth')},
        ${param('email_domains')}, ${param('allowed_origins')}, ${param('jit_role')}, ${param('created_at')})`);
    this.byOrganization = db.prepare(sql`SELECT ${COLUMNS} FROM trusted_issuers
      WHERE organization_id = ${param('organizationId')} ORDER BY created_at, id`);
    this.byId = db.prepare(sql`SELECT ${COLUMNS} FROM trusted_issuers WHERE id = ${param('id')}`);
    const byIssuers = db.prepare<{ issuers: string[] }>(sql`SELECT ${COLUMNS} FROM trusted_issuers
      WHERE ${db.textIn('issuer', 'issuers')} ORDER BY created_at, id`);
    this.byIssuer = batchedByKey(async (issuers) => {
      const found = new Map<string, TrustedIssuer[]>();
      for (const row of await db.rows<TrustedIssuerRow, { issuers: string[] }>(byIssuers, { issuers })) {
        found.set(row.issuer, [...(found.get(row.issuer) ?? []), toEntry(row)]);
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
    this.deleteById = db.prepare(
      db.returning(sql`DELETE FROM trusted_issuers WHERE id = ${param('id')} RETURNING ${COLUMNS}`, '*'),
    );
  }

  async insert(entry: TrustedIssuer, tx: Transaction): Promise<void> {
    await this.db.run(tx, this.insertIssuer, {
      id: entry.id,
      organization_id: entry.organizationId,
      issuer: entry.issuer,
      kind: entry.kind,
      audience: entry.audience,
      client_id: entry.clientId,
      client_secret_encrypted: entry.clientSecretEncrypted,
      token_endpoint_auth: entry.tokenEndpointAuth,
      email_domains: JSON.stringify(entry.emailDomains),
      allowed_origins: JSON.stringify(entry.allowedOrigins),
      jit_role: entry.jitRole,
      created_at: entry.createdAt.toISOString(),
    });
  }

  async findByOrganization(organizationId: string): Promise<TrustedIssuer[]> {
    return (
      await this.db.rows<TrustedIssuerRow, { organizationId: string }>(this.byOrganization, { organizationId })
    ).map(toEntry);
  }

  async findById(id: string): Promise<TrustedIssuer | null> {
    const rows = await this.db.rows<TrustedIssuerRow, { id: string }>(this.byId, { id });
    return rows[0] === undefined ? null : toEntry(rows[0]);
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
    const rows = await this.db.rows<TrustedIssuerRow, { organizationId: string }>(this.peopleOfOrganization, {
      organizationId,
    });
    return rows[0] === undefined ? null : toEntry(rows[0]);
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

  /** Deletes the entry and returns it as it was; null when there is none. */
  async delete(id: string, tx: Transaction): Promise<TrustedIssuer | null> {
    const rows = await this.db.run<TrustedIssuerRow, { id: string }>(tx, this.deleteById, { id });
    return rows[0] === undefined ? null : toEntry(rows[0]);
  }
}

function toEntry(row: TrustedIssuerRow): TrustedIssuer {
  return Object.assign(new TrustedIssuer(), {
    id: row.id,
    organizationId: row.organization_id,
    issuer: row.issuer,
    kind: row.kind,
    audience: row.audience,
    clientId: row.client_id,
    clientSecretEncrypted: row.client_secret_encrypted,
    tokenEndpointAuth: row.token_endpoint_auth,
    emailDomains: JSON.parse(row.email_domains) as string[],
    allowedOrigins: JSON.parse(row.allowed_origins) as string[],
    jitRole: row.jit_role,
    createdAt: toDate(row.created_at),
  });
}
