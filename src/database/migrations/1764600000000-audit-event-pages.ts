import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The indexes of GET /v1/audit-events and of retention (docs/adr/0018-audit-event-pages.md). A page
 * is one organization's events, newest first (occurred_at DESC, id DESC), optionally narrowed to an
 * action, an actor or a target, from a keyset position: each index below holds one of those
 * narrowings in exactly that order after its equality columns, so a page reads `limit` entries from
 * where it starts, however many events there are and however deep the page. Events without an
 * organization (an exchange refused for a key nobody owns) are never listed and stay out of them.
 * audit_events_occurred serves retention: the oldest events of every organization first.
 *
 * They replace audit_events_org_time (no id, so a page boundary inside one millisecond needed a
 * sort) and audit_events_target (every organization's events on the target, unordered).
 *
 * Outside a transaction, so that PostgreSQL builds them CONCURRENTLY (see 1764300000000): writers
 * are not blocked while a large table is indexed. An index left invalid by a build that failed
 * half-way is dropped first, so that running the migration again repairs it.
 */
const INDEXES: Array<[name: string, definition: string]> = [
  ['audit_events_org_newest', `(organization_id, occurred_at DESC, id DESC) WHERE organization_id IS NOT NULL`],
  ['audit_events_org_action', `(organization_id, action, occurred_at DESC, id DESC) WHERE organization_id IS NOT NULL`],
  [
    'audit_events_org_actor',
    `(organization_id, actor_user_id, occurred_at DESC, id DESC)
      WHERE organization_id IS NOT NULL AND actor_user_id IS NOT NULL`,
  ],
  [
    'audit_events_org_target',
    `(organization_id, target_id, occurred_at DESC, id DESC)
      WHERE organization_id IS NOT NULL AND target_id IS NOT NULL`,
  ],
  ['audit_events_occurred', '(occurred_at)'],
];
const REPLACED = ['audit_events_org_time', 'audit_events_target'];

export class AuditEventPages1764600000000 implements MigrationInterface {
  name = 'AuditEventPages1764600000000';
  transaction = false;

  async up(queryRunner: QueryRunner): Promise<void> {
    const postgres = queryRunner.connection.options.type === 'postgres';
    const concurrently = postgres ? ' CONCURRENTLY' : '';
    for (const [name, definition] of INDEXES) {
      await queryRunner.query(`DROP INDEX${concurrently} IF EXISTS ${name}`);
      await queryRunner.query(`CREATE INDEX${concurrently} ${name} ON audit_events ${definition}`);
    }
    for (const name of REPLACED) await queryRunner.query(`DROP INDEX${concurrently} IF EXISTS ${name}`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`CREATE INDEX audit_events_org_time ON audit_events (organization_id, occurred_at DESC)`);
    await queryRunner.query(`CREATE INDEX audit_events_target ON audit_events (target_id)`);
    for (const [name] of INDEXES) await queryRunner.query(`DROP INDEX ${name}`);
  }
}
