import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { batchedById, batchedByKey } from '../database/batch-loader';
import { param, raw, sql, Sql, Statement } from '../database/sql';
import type { Transaction } from '../database/unit-of-work';
import {
  MEMBER_ACCESS_VIEW,
  MemberAccessColumns,
  MembershipAccess,
  toMembershipAccess,
} from '../identity/member-access';
import type { PermissionMask } from '../identity/roles';
import type { WorkloadIdentity } from './workload-identity.entity';
import { CredentialKinds } from '../credentials/credential-kinds';
import { CredentialsRepository, SharedInsertArgs } from '../credentials/credentials.repository';
import { credentialState, CredentialState } from '../credentials/credential-kind';
import { WORKLOAD_IDENTITY_KIND } from './workload-identity-kind';

/** An ACTIVE identity of the token exchange's candidates, with its owner's membership (the owner is a member). */
export interface IdentityCandidate {
  id: string;
  organizationId: string;
  userId: string;
  trustedIssuerId: string;
  issuer: string;
  subject: string;
  /** As stored: a JSON object as text. */
  conditions: string;
  scopes: PermissionMask;
  expiresAtMs: number | null;
  ownerAccess: MembershipAccess;
}

/** The identity an exchange names (`client_id`), whatever its status, and its owner's membership if any. */
export type NamedIdentity = Omit<IdentityCandidate, 'ownerAccess'> & {
  status: WorkloadIdentity['status'];
  ownerAccess: MembershipAccess | null;
};

/** The token paths' projection (`credential` below): the identity's columns they need and its owner's membership. */
type CredentialRow = {
  id: string;
  organization_id: string;
  user_id: string;
  status: WorkloadIdentity['status'];
  scopes: number | string;
  expires_at_ms: number | string | null;
} & MemberAccessColumns;

/** The exchange's projection: the above and what a subject token is matched against. */
type CandidateRow = CredentialRow & { trusted_issuer_id: string; issuer: string; subject: string; conditions: string };

/** The insert's arguments besides the shared columns (CredentialsRepository.insertUnderLock). */
interface OwnInsertArgs {
  trustedIssuerId: string;
  issuer: string;
  subject: string;
  conditions: string;
  reachableBy: string;
  cap: number;
}

type RevokeTrustingArgs = { organizationId: string; trustedIssuerId: string; at: string };

const expiresAtMs = (value: number | string | null): number | null => (value === null ? null : Number(value));

/** Every query on one owner's workload identities and the token paths' reads (hot-path reads batched per turn). */
@Injectable()
export class WorkloadIdentitiesRepository extends CredentialsRepository<WorkloadIdentity> {
  private readonly credentialById: (id: string) => Promise<CredentialRow | undefined>;
  /** Every token exchange reads its candidates: batched per event-loop turn, as the key look-ups are. */
  private readonly candidates: (key: string) => Promise<CandidateRow[]>;
  /** An exchange that names its identity (`client_id`) reads it by id, batched per turn as the credentials are. */
  private readonly candidateById: (id: string) => Promise<CandidateRow | undefined>;
  private readonly insertWithinCap: Statement<SharedInsertArgs & OwnInsertArgs>;
  private readonly revokeTrusting: Statement<RevokeTrustingArgs>;

  constructor(@InjectDataSource() dataSource: DataSource, kinds: CredentialKinds) {
    super(dataSource, WORKLOAD_IDENTITY_KIND, kinds);
    const db = this.db;

    // One query for every token minted through an identity (as a key's: docs/architecture.md#hot-path-a-bearer-request).
    const credential = sql`w.id, w.organization_id, w.user_id, w.status, w.scopes,
      ${db.epochMs('w.expires_at')} AS expires_at_ms, a.role, a.access_token_lifetime`;
    const owner = (join: string): Sql => sql`${raw(join)} ${raw(MEMBER_ACCESS_VIEW)} a
      ON a.organization_id = w.organization_id AND a.user_id = w.user_id`;
    const credentials = db.prepare<{ ids: readonly string[] }>(sql`SELECT ${credential}
      FROM workload_identities w ${owner('LEFT JOIN')} WHERE ${db.idIn('w.id', 'ids')}`);
    this.credentialById = batchedById((ids) =>
      db.rows<CredentialRow, { ids: readonly string[] }>(credentials, { ids }),
    );
    // An exchange naming its identity: the identity by id, whatever its status and owner (the service says no).
    const named = db.prepare<{ ids: readonly string[] }>(sql`SELECT
        ${credential}, w.trusted_issuer_id, w.issuer, w.subject, w.conditions
      FROM workload_identities w ${owner('LEFT JOIN')} WHERE ${db.idIn('w.id', 'ids')}`);
    this.candidateById = batchedById((ids) => db.rows<CandidateRow, { ids: readonly string[] }>(named, { ids }));
    // The exchange's candidates without a name: ACTIVE identities reachable by subject of the token's trusted issuers
    // with its exact `sub`, whose owner is still a member (workload_identities_match).
    // The (issuer id, subject) pairs of the turn's exchanges, each looked up in workload_identities_match.
    type Pair = { issuer_id: string; subject: string };
    const candidates = db.prepare<{ pairs: readonly Pair[] }>(sql`SELECT
        ${credential}, w.trusted_issuer_id, w.issuer, w.subject, w.conditions
      FROM ${db.jsonRecords('pairs', 'k', [
        ['issuer_id', 'uuid'],
        ['subject', 'text'],
      ])}
      JOIN workload_identities w ON w.trusted_issuer_id = k.issuer_id AND w.subject = k.subject AND w.status = 'ACTIVE'
        AND w.reachable_by = 'subject'
      ${owner('JOIN')}`);
    // Keyed by the issuer ids and the subject (candidateKey); one query for the turn's keys, each key's rows picked out.
    this.candidates = batchedByKey(async (keys) => {
      const asked = keys.map(parseCandidateKey);
      const pairs = new Map<string, Pair>();
      for (const { issuerIds, subject } of asked) {
        for (const id of issuerIds) pairs.set(JSON.stringify([id, subject]), { issuer_id: id, subject });
      }
      const rows = await db.rows<CandidateRow, { pairs: readonly Pair[] }>(candidates, { pairs: [...pairs.values()] });
      return new Map(
        keys.map((key, i) => [
          key,
          rows.filter((row) => row.subject === asked[i].subject && asked[i].issuerIds.includes(row.trusted_issuer_id)),
        ]),
      );
    }, []);

    const owned = sql`user_id = ${param('userId')} AND organization_id = ${param('organizationId')}`;
    // The cap and the membership checked in the insert itself, under the owner's lock, as a key's creation
    // (docs/adr/0027-the-house.md#creation-within-the-cap).
    const value = (name: string, type: string): Sql => db.cast(param(name), type);
    const usable = sql`SELECT COUNT(*) FROM (SELECT 1 FROM workload_identities WHERE ${owned} AND status = 'ACTIVE'
      AND (expires_at IS NULL OR expires_at > ${param('createdAt')}) LIMIT ${param('cap')}) u`;
    this.insertWithinCap = db.prepare(sql`INSERT INTO workload_identities
        (id, organization_id, user_id, trusted_issuer_id, issuer, label, subject, conditions, status, reachable_by,
         scopes, expires_at, created_at, updated_at)
      SELECT ${value('id', 'uuid')}, ${value('organizationId', 'uuid')}, ${value('userId', 'uuid')},
        ${value('trustedIssuerId', 'uuid')}, ${value('issuer', 'varchar')}, ${value('label', 'varchar')},
        ${value('subject', 'varchar')}, ${value('conditions', 'text')}, 'ACTIVE', ${value('reachableBy', 'varchar')},
        ${value('scopes', 'integer')},
        ${value('expiresAt', 'timestamptz')}, ${value('createdAt', 'timestamptz')}, ${value('createdAt', 'timestamptz')}
      WHERE (${usable}) < ${param('cap')}
        AND EXISTS (SELECT 1 FROM ${raw(MEMBER_ACCESS_VIEW)}
          WHERE organization_id = ${param('organizationId')} AND user_id = ${param('userId')})
      RETURNING id`);
    // A trusted issuer's removal, through workload_identities_match (trusted_issuer_id first, ACTIVE rows only).
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

  /** Stores the identity unless its owner has `cap` usable ones, or is no longer a member; under the owner's lock. */
  async insertWithinActiveCap(identity: WorkloadIdentity, cap: number, tx: Transaction): Promise<boolean> {
    const { trustedIssuerId, issuer, subject, conditions, reachableBy } = identity;
    const own = { trustedIssuerId, issuer, subject, conditions, reachableBy, cap };
    return this.insertUnderLock(this.insertWithinCap, identity, own, tx);
  }

  /**
   * A token's liveness: the identity with this id and its owner's membership, one query batched per event-loop turn
   * (undefined for an unknown id).
   */
  async read(id: string): Promise<CredentialState | undefined> {
    const row = await this.credentialById(id);
    if (row === undefined) return undefined;
    return credentialState(row, {
      status: row.status,
      scopes: Number(row.scopes),
      expiresAtMs: expiresAtMs(row.expires_at_ms),
    });
  }

  /**
   * The ACTIVE identities reachable by subject (`reachable_by = 'subject'`) of these trusted issuers with exactly this
   * subject whose owner is a member: an exchange that names no identity.
   */
  async findCandidates(issuerIds: readonly string[], subject: string): Promise<IdentityCandidate[]> {
    if (issuerIds.length === 0) return [];
    const rows = await this.candidates(candidateKey(issuerIds, subject));
    return rows.flatMap((row) => {
      const ownerAccess = toMembershipAccess(row);
      return ownerAccess === null ? [] : [toCandidate(row, ownerAccess)];
    });
  }

  /**
   * The identity an exchange names by its id (`client_id`), however it is reached, with its status and its owner's
   * membership (null: no longer a member); undefined for an unknown id (batched).
   */
  async findNamed(id: string): Promise<NamedIdentity | undefined> {
    const row = await this.candidateById(id);
    return row === undefined
      ? undefined
      : Object.assign(toCandidate(row, toMembershipAccess(row)), { status: row.status });
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

function toCandidate<A extends MembershipAccess | null>(
  row: CandidateRow,
  ownerAccess: A,
): Omit<IdentityCandidate, 'ownerAccess'> & { ownerAccess: A } {
  return {
    id: row.id,
    organizationId: row.organization_id,
    userId: row.user_id,
    trustedIssuerId: row.trusted_issuer_id,
    issuer: row.issuer,
    subject: row.subject,
    conditions: row.conditions,
    scopes: Number(row.scopes),
    expiresAtMs: expiresAtMs(row.expires_at_ms),
    ownerAccess,
  };
}

/** A batch key of the exchange's candidates: the issuer ids (lower-cased, sorted) and the subject. */
function candidateKey(issuerIds: readonly string[], subject: string): string {
  return JSON.stringify([[...issuerIds].map((id) => id.toLowerCase()).sort(), subject]);
}

function parseCandidateKey(key: string): { issuerIds: string[]; subject: string } {
  const [issuerIds, subject] = JSON.parse(key) as [string[], string];
  return { issuerIds, subject };
}
