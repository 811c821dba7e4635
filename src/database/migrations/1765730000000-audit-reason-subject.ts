import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * `audit_events.reason` holds a subject token's `sub` (`workload_identity.exchanged`, docs/federation.md#token-exchange):
 * as long as a workload identity's subject (1,024 characters, MAX_SUBJECT_LENGTH), where a refusal's code fitted in
 * 64. At 64, PostgreSQL refused the statement of a longer one, and with it the other exchanges' entries written in the
 * same one (AuditService.recordSoon). Widening a varchar rewrites nothing. SQLite does not enforce the length.
 */
export class AuditReasonSubject1765730000000 implements MigrationInterface {
  name = 'AuditReasonSubject1765730000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    if (queryRunner.connection.options.type !== 'postgres') return;
    await queryRunner.query(`ALTER TABLE audit_events ALTER COLUMN reason TYPE varchar(1024)`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    if (queryRunner.connection.options.type !== 'postgres') return;
    await queryRunner.query(`ALTER TABLE audit_events ALTER COLUMN reason TYPE varchar(64) USING left(reason, 64)`);
  }
}
