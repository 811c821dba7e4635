import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { toDate } from '../database/columns';
import { Dialect, param, sql, Statement } from '../database/sql';

/** A sign-in link as stored: never the code itself, only its hash. */
export interface NewSignInLink {
  codeHash: string;
  organizationId: string;
  userId: string;
  createdAt: Date;
  expiresAt: Date;
  /** What its `console.signed_in` records as the reason: null for an admin's link, `sso:<issuer id>` for single sign-on. */
  signInReason: string | null;
  /**
   * The SHA-256 of the browser-binding cookie of the single sign-on that made the link: only that browser may trade it.
   * Null for an administrator's link, which any browser may open.
   */
  bindingHash: string | null;
}

/**
 * Why a code could not be used, when it matched a stored link: used, expired, or unused but brought by another browser
 * than the one its single sign-on was started in (the binding cookie another one, or missing).
 */
export type UnusableLink = 'used' | 'expired' | 'other_browser';

/** Whom a consumed link signs in. */
export interface ConsumedLink {
  organizationId: string;
  userId: string;
  signInReason: string | null;
}

/** Every query on console_sign_in_links. */
@Injectable()
export class ConsoleSignInRepository {
  private readonly db: Dialect;
  private readonly insertLink: Statement<{
    id: string;
    codeHash: string;
    organizationId: string;
    userId: string;
    createdAt: string;
    expiresAt: string;
    signInReason: string | null;
    bindingHash: string | null;
  }>;
  private readonly consumeLink: Statement<{ codeHash: string; bindingHash: string; now: string }>;
  private readonly linkState: Statement<{ codeHash: string }>;
  private readonly prune: Statement<{ before: string }>;

  constructor(@InjectDataSource() dataSource: DataSource) {
    const db = Dialect.of(dataSource);
    this.db = db;
    this.insertLink = db.prepare(sql`INSERT INTO console_sign_in_links
      (id, code_hash, organization_id, user_id, created_at, expires_at, used_at, sign_in_reason, binding_hash)
      VALUES (${param('id')}, ${param('codeHash')}, ${param('organizationId')}, ${param('userId')},
        ${param('createdAt')}, ${param('expiresAt')}, NULL, ${param('signInReason')}, ${param('bindingHash')})`);
    // One statement decides: of two requests with the same code, on any instance, one gets the row. A bound link
    // brought by another browser gets none and stays unusable to all but the browser that started its sign-in.
    this.consumeLink = db.prepare(sql`UPDATE console_sign_in_links SET used_at = ${param('now')}
      WHERE code_hash = ${param('codeHash')} AND used_at IS NULL AND expires_at > ${param('now')}
        AND (binding_hash IS NULL OR binding_hash = ${param('bindingHash')})
      RETURNING organization_id, user_id, sign_in_reason`);
    this.linkState = db.prepare(
      sql`SELECT used_at, expires_at, organization_id, user_id, sign_in_reason FROM console_sign_in_links
        WHERE code_hash = ${param('codeHash')}`,
    );
    this.prune = db.prepare(sql`DELETE FROM console_sign_in_links WHERE expires_at < ${param('before')}`);
  }

  async insert(link: NewSignInLink): Promise<void> {
    await this.db.rows(this.insertLink, {
      id: randomUUID(),
      codeHash: link.codeHash,
      organizationId: link.organizationId,
      userId: link.userId,
      createdAt: link.createdAt.toISOString(),
      expiresAt: link.expiresAt.toISOString(),
      signInReason: link.signInReason,
      bindingHash: link.bindingHash,
    });
  }

  /**
   * Marks the link used and returns whom it signs in; null when no unused, unexpired link has that hash, or when the
   * link is bound to a browser whose cookie's hash is not `bindingHash`.
   */
  async consume(codeHash: string, bindingHash: string, now: Date): Promise<ConsumedLink | null> {
    const rows = await this.db.rows<
      { organization_id: string; user_id: string; sign_in_reason: string | null },
      { codeHash: string; bindingHash: string; now: string }
    >(this.consumeLink, { codeHash, bindingHash, now: now.toISOString() });
    const row = rows[0];
    return row === undefined
      ? null
      : { organizationId: row.organization_id, userId: row.user_id, signInReason: row.sign_in_reason };
  }

  /** After a failed consume: why the link is unusable; null when there is no such link. */
  async unusableReason(codeHash: string, now: Date): Promise<(ConsumedLink & { reason: UnusableLink }) | null> {
    const rows = await this.db.rows<
      {
        used_at: Date | string | null;
        expires_at: Date | string;
        organization_id: string;
        user_id: string;
        sign_in_reason: string | null;
      },
      { codeHash: string }
    >(this.linkState, { codeHash });
    const row = rows[0];
    if (row === undefined) return null;
    const expired = toDate(row.expires_at).getTime() <= now.getTime();
    return {
      reason: row.used_at !== null ? 'used' : expired ? 'expired' : 'other_browser',
      organizationId: row.organization_id,
      userId: row.user_id,
      signInReason: row.sign_in_reason,
    };
  }

  /** Deletes links that expired before `before`. */
  async pruneExpired(before: Date): Promise<void> {
    await this.db.rows(this.prune, { before: before.toISOString() });
  }
}
