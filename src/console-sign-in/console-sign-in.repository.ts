import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { placeholders, RowReader, rowReader } from '../database/sql';

/** A sign-in link as stored: never the code itself, only its hash. */
export interface NewSignInLink {
  codeHash: string;
  organizationId: string;
  userId: string;
  createdAt: Date;
  expiresAt: Date;
}

/** Why a code could not be used, when it matched a stored link. */
export type UnusableLink = 'used' | 'expired';

/** Whom a consumed link signs in. */
export interface ConsumedLink {
  organizationId: string;
  userId: string;
}

/** Every query on console_sign_in_links. */
@Injectable()
export class ConsoleSignInRepository {
  private readonly insertSql: string;
  private readonly consumeSql: string;
  private readonly stateSql: string;
  private readonly pruneSql: string;
  private readonly run: RowReader;

  constructor(@InjectDataSource() dataSource: DataSource) {
    const p = placeholders(dataSource);
    this.run = rowReader(dataSource);
    this.insertSql = `INSERT INTO console_sign_in_links
      (id, code_hash, organization_id, user_id, created_at, expires_at, used_at)
      VALUES (${p(1)}, ${p(2)}, ${p(3)}, ${p(4)}, ${p(5)}, ${p(6)}, NULL)`;
    // One statement decides: of two requests with the same code, on any instance, one gets the row.
    this.consumeSql = `UPDATE console_sign_in_links SET used_at = ${p(1)}
      WHERE code_hash = ${p(2)} AND used_at IS NULL AND expires_at > ${p(3)}
      RETURNING organization_id, user_id`;
    this.stateSql = `SELECT used_at, organization_id, user_id FROM console_sign_in_links WHERE code_hash = ${p(1)}`;
    this.pruneSql = `DELETE FROM console_sign_in_links WHERE expires_at < ${p(1)}`;
  }

  async insert(link: NewSignInLink): Promise<void> {
    await this.run(this.insertSql, [
      randomUUID(),
      link.codeHash,
      link.organizationId,
      link.userId,
      link.createdAt.toISOString(),
      link.expiresAt.toISOString(),
    ]);
  }

  /** Marks the link used and returns whom it signs in; null when no unused, unexpired link has that hash. */
  async consume(codeHash: string, now: Date): Promise<ConsumedLink | null> {
    const rows = await this.run<{ organization_id: string; user_id: string }>(this.consumeSql, [
      now.toISOString(),
      codeHash,
      now.toISOString(),
    ]);
    return rows[0] === undefined ? null : { organizationId: rows[0].organization_id, userId: rows[0].user_id };
  }

  /** After a failed consume: whether the link was used or has expired; null when there is no such link. */
  async unusableReason(codeHash: string): Promise<(ConsumedLink & { reason: UnusableLink }) | null> {
    const rows = await this.run<{ used_at: Date | string | null; organization_id: string; user_id: string }>(
      this.stateSql,
      [codeHash],
    );
    const row = rows[0];
    if (row === undefined) return null;
    return {
      reason: row.used_at === null ? 'expired' : 'used',
      organizationId: row.organization_id,
      userId: row.user_id,
    };
  }

  /** Deletes links that expired before `before`. */
  async pruneExpired(before: Date): Promise<void> {
    await this.run(this.pruneSql, [before.toISOString()]);
  }
}
