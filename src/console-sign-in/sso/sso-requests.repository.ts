import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { toDate } from '../../database/columns';
import { Dialect, param, sql, Statement } from '../../database/sql';

/** A sign-in started at the identity provider, as stored: the state and the binding only as their SHA-256. */
export interface NewSsoRequest {
  stateHash: string;
  bindingHash: string;
  organizationId: string;
  trustedIssuerId: string;
  nonce: string;
  codeVerifier: string;
  createdAt: Date;
  expiresAt: Date;
}

/** What the callback needs of its request. */
export interface ConsumedSsoRequest {
  organizationId: string;
  trustedIssuerId: string;
  nonce: string;
  codeVerifier: string;
}

/**
 * Why a state matched no usable request, when it matched a stored one: already used, expired, or unused but not the
 * browser that started it (the binding cookie is another one, or missing).
 */
export type UnusableSsoRequest = 'used' | 'expired' | 'other_browser';

interface RequestRow {
  organization_id: string;
  trusted_issuer_id: string;
  nonce: string;
  code_verifier: string;
}

type InsertArgs = Omit<NewSsoRequest, 'createdAt' | 'expiresAt'> & { id: string; createdAt: string; expiresAt: string };

/** Every query on console_sso_requests (docs/adr/0039-console-single-sign-on.md). */
@Injectable()
export class SsoRequestsRepository {
  private readonly db: Dialect;
  private readonly insertRequest: Statement<InsertArgs>;
  private readonly consumeRequest: Statement<{ stateHash: string; bindingHash: string; now: string }>;
  private readonly requestState: Statement<{ stateHash: string }>;
  private readonly prune: Statement<{ before: string }>;

  constructor(@InjectDataSource() dataSource: DataSource) {
    const db = Dialect.of(dataSource);
    this.db = db;
    this.insertRequest = db.prepare(sql`INSERT INTO console_sso_requests
      (id, state_hash, binding_hash, organization_id, trusted_issuer_id, nonce, code_verifier, created_at, expires_at,
        used_at)
      VALUES (${param('id')}, ${param('stateHash')}, ${param('bindingHash')}, ${param('organizationId')},
        ${param('trustedIssuerId')}, ${param('nonce')}, ${param('codeVerifier')}, ${param('createdAt')},
        ${param('expiresAt')}, NULL)`);
    // One statement decides: of two callbacks with the same state, on any instance, one gets the row; a callback
    // from another browser gets none and leaves the row to the browser that started the sign-in.
    this.consumeRequest = db.prepare(sql`UPDATE console_sso_requests SET used_at = ${param('now')}
      WHERE state_hash = ${param('stateHash')} AND binding_hash = ${param('bindingHash')}
        AND used_at IS NULL AND expires_at > ${param('now')}
      RETURNING organization_id, trusted_issuer_id, nonce, code_verifier`);
    this.requestState = db.prepare(
      sql`SELECT used_at, expires_at FROM console_sso_requests WHERE state_hash = ${param('stateHash')}`,
    );
    this.prune = db.prepare(sql`DELETE FROM console_sso_requests WHERE expires_at < ${param('before')}`);
  }

  async insert(request: NewSsoRequest): Promise<void> {
    await this.db.rows(this.insertRequest, {
      id: randomUUID(),
      stateHash: request.stateHash,
      bindingHash: request.bindingHash,
      organizationId: request.organizationId,
      trustedIssuerId: request.trustedIssuerId,
      nonce: request.nonce,
      codeVerifier: request.codeVerifier,
      createdAt: request.createdAt.toISOString(),
      expiresAt: request.expiresAt.toISOString(),
    });
  }

  /** Marks the request used and returns it; null when no unused, unexpired request has that state and binding. */
  async consume(stateHash: string, bindingHash: string, now: Date): Promise<ConsumedSsoRequest | null> {
    const rows = await this.db.rows<RequestRow, { stateHash: string; bindingHash: string; now: string }>(
      this.consumeRequest,
      { stateHash, bindingHash, now: now.toISOString() },
    );
    const row = rows[0];
    if (row === undefined) return null;
    return {
      organizationId: row.organization_id,
      trustedIssuerId: row.trusted_issuer_id,
      nonce: row.nonce,
      codeVerifier: row.code_verifier,
    };
  }

  /** After a failed consume: why the request of that state is unusable; null when there is no such request. */
  async unusableReason(stateHash: string, now: Date): Promise<UnusableSsoRequest | null> {
    const rows = await this.db.rows<
      { used_at: Date | string | null; expires_at: Date | string },
      { stateHash: string }
    >(this.requestState, { stateHash });
    const row = rows[0];
    if (row === undefined) return null;
    if (row.used_at !== null) return 'used';
    return toDate(row.expires_at).getTime() <= now.getTime() ? 'expired' : 'other_browser';
  }

  /** Deletes requests that expired before `before`. */
  async pruneExpired(before: Date): Promise<void> {
    await this.db.rows(this.prune, { before: before.toISOString() });
  }
}
