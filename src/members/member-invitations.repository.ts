import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { EntityRows, RawRow } from '../database/entity-rows';
import { Dialect, join, param, raw, sql, Statement } from '../database/sql';
import type { Transaction } from '../database/unit-of-work';
import { MemberInvitation } from './member-invitation.entity';

/** Why a code matched an invitation that cannot be used. */
export type UnusableInvitation = 'used' | 'expired';

interface MemberArgs {
  organizationId: string;
  userId: string;
}

/** Every query on member_invitations. */
@Injectable()
export class MemberInvitationsRepository {
  private readonly db: Dialect;
  private readonly rows: EntityRows<MemberInvitation>;
  private readonly insertOne: Statement<RawRow>;
  private readonly deletePendingOf: Statement<MemberArgs>;
  private readonly pendingOf: Statement<{ organizationId: string; now: string }>;
  private readonly deleteOne: Statement<{ organizationId: string; id: string }>;
  private readonly consumeOne: Statement<{ codeHash: string; now: string }>;
  private readonly byCode: Statement<{ codeHash: string }>;
  private readonly prune: Statement<{ before: string }>;

  constructor(@InjectDataSource() dataSource: DataSource) {
    const db = Dialect.of(dataSource);
    this.db = db;
    this.rows = EntityRows.of(dataSource, MemberInvitation);
    const columns = this.rows.columns;
    // Every column, each bound from the entity's record (EntityRows.toRecord).
    this.insertOne = db.prepare(sql`INSERT INTO member_invitations (${raw(columns)})
      VALUES (${join(
        this.rows.columnNames.map((column) => sql`${param(column)}`),
        ', ',
      )})`);
    this.deletePendingOf = db.prepare(sql`DELETE FROM member_invitations
      WHERE organization_id = ${param('organizationId')} AND user_id = ${param('userId')} AND accepted_at IS NULL`);
    this.pendingOf = db.prepare(sql`SELECT ${raw(columns)} FROM member_invitations
      WHERE organization_id = ${param('organizationId')} AND accepted_at IS NULL AND expires_at > ${param('now')}
      ORDER BY created_at DESC, id DESC`);
    this.deleteOne = db.prepare(
      db.returning(
        sql`DELETE FROM member_invitations
          WHERE id = ${param('id')} AND organization_id = ${param('organizationId')} AND accepted_at IS NULL
          RETURNING ${raw(columns)}`,
        columns,
      ),
    );
    // One statement decides: of two requests with the same code, on any instance, one gets the row.
    this.consumeOne = db.prepare(
      db.returning(
        sql`UPDATE member_invitations SET accepted_at = ${param('now')}
          WHERE code_hash = ${param('codeHash')} AND accepted_at IS NULL AND expires_at > ${param('now')}
          RETURNING ${raw(columns)}`,
        columns,
      ),
    );
    this.byCode = db.prepare(
      sql`SELECT ${raw(columns)} FROM member_invitations WHERE code_hash = ${param('codeHash')}`,
    );
    this.prune = db.prepare(sql`DELETE FROM member_invitations WHERE expires_at < ${param('before')}`);
  }

  /** Stores the invitation in place of the person's pending one, if any, inside `tx`. */
  async replacePending(invitation: MemberInvitation, tx: Transaction): Promise<void> {
    await this.db.run(tx, this.deletePendingOf, {
      organizationId: invitation.organizationId,
      userId: invitation.userId,
    });
    await this.db.run(tx, this.insertOne, this.rows.toRecord(invitation));
  }

  /** Deletes the person's pending invitation (their removal), inside `tx`. */
  async deletePending(organizationId: string, userId: string, tx: Transaction): Promise<void> {
    await this.db.run(tx, this.deletePendingOf, { organizationId, userId });
  }

  /** The organization's invitations neither used nor expired, newest first. */
  async findPending(organizationId: string, now: Date): Promise<MemberInvitation[]> {
    const rows = await this.db.rows<RawRow, { organizationId: string; now: string }>(this.pendingOf, {
      organizationId,
      now: now.toISOString(),
    });
    return rows.map(this.rows.toEntity);
  }

  /** Deletes the organization's unused invitation and returns it; null when there is none of that id. */
  async deleteUnused(organizationId: string, id: string, tx: Transaction): Promise<MemberInvitation | null> {
    const rows = await this.db.run<RawRow, { organizationId: string; id: string }>(tx, this.deleteOne, {
      organizationId,
      id,
    });
    return rows[0] === undefined ? null : this.rows.toEntity(rows[0]);
  }

  /** Marks the invitation of that code used and returns it; null when no unused, unexpired one has it. */
  async consume(codeHash: string, now: Date, tx: Transaction): Promise<MemberInvitation | null> {
    const rows = await this.db.run<RawRow, { codeHash: string; now: string }>(tx, this.consumeOne, {
      codeHash,
      now: now.toISOString(),
    });
    return rows[0] === undefined ? null : this.rows.toEntity(rows[0]);
  }

  /** After a failed consume: why the invitation of that code cannot be used; null when there is none. */
  async unusableReason(codeHash: string, now: Date): Promise<UnusableInvitation | null> {
    const rows = await this.db.rows<RawRow, { codeHash: string }>(this.byCode, { codeHash });
    if (rows[0] === undefined) return null;
    const invitation = this.rows.toEntity(rows[0]);
    if (invitation.acceptedAt !== null) return 'used';
    return invitation.expiresAt.getTime() <= now.getTime() ? 'expired' : null;
  }

  /** Deletes invitations that expired before `before` (used ones too). */
  async pruneExpired(before: Date, tx: Transaction): Promise<void> {
    await this.db.run(tx, this.prune, { before: before.toISOString() });
  }
}
