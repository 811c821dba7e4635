import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { toDate } from '../../database/columns';
import { Dialect, param, sql, Statement } from '../../database/sql';

/** An ACTIVE key with an expiry: what an expiry notice names (never its secret or label). */
export interface ExpiringKey {
  id: string;
  organizationId: string;
  userId: string;
  expiresAt: Date;
}

type Args = { organizationIds: readonly string[]; until: string; fromAt: string; fromId: string; limit: number };
type Row = { id: string; organization_id: string; user_id: string; expires_at: Date | string };

/** The one read of keys by expiry (webhooks' `api_key.expiring` notices: docs/webhooks.md#events). */
@Injectable()
export class ExpiringKeysRepository {
  private readonly db: Dialect;
  private readonly page: Statement<Args>;

  constructor(@InjectDataSource() dataSource: DataSource) {
    const db = Dialect.of(dataSource);
    this.db = db;
    // Keyset order (expires_at, id): a page starts after the last one's key; the active keys of each organization come
    // from api_keys_org_active.
    this.page = db.prepare(sql`SELECT id, organization_id, user_id, expires_at FROM api_keys
      WHERE ${db.idIn('organization_id', 'organizationIds')} AND status = 'ACTIVE'
        AND expires_at <= ${param('until')}
        AND (expires_at > ${param('fromAt')} OR (expires_at = ${param('fromAt')} AND id > ${param('fromId')}))
      ORDER BY expires_at, id LIMIT ${param('limit')}`);
  }

  /** Up to `limit` keys of these organizations expiring after `from` (and its id) and at the latest at `until`. */
  async findPage(
    organizationIds: readonly string[],
    from: { at: Date; id: string },
    until: Date,
    limit: number,
  ): Promise<ExpiringKey[]> {
    const rows = await this.db.rows<Row, Args>(this.page, {
      organizationIds,
      until: until.toISOString(),
      fromAt: from.at.toISOString(),
      fromId: from.id,
      limit,
    });
    return rows.map((row) => ({
      id: row.id,
      organizationId: row.organization_id,
      userId: row.user_id,
      expiresAt: toDate(row.expires_at),
    }));
  }
}
