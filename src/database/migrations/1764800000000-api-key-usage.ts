import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The usage fields beside last_used_at (docs/api.md#usage-fields): the client address and the
 * User-Agent of a key's last successful exchange, written with it by the same batched UPDATE.
 * 45 characters hold the longest textual IP address; the User-Agent is cut to 255 characters
 * before it is stored (PostgreSQL's varchar counts characters, as the service does).
 *
 * Nullable columns without a default: PostgreSQL adds them without rewriting the table. Existing
 * keys get null in both until their next exchange.
 */
export class ApiKeyUsage1764800000000 implements MigrationInterface {
  name = 'ApiKeyUsage1764800000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE api_keys ADD COLUMN last_used_ip varchar(45) NULL`);
    await queryRunner.query(`ALTER TABLE api_keys ADD COLUMN last_used_user_agent varchar(255) NULL`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE api_keys DROP COLUMN last_used_user_agent`);
    await queryRunner.query(`ALTER TABLE api_keys DROP COLUMN last_used_ip`);
  }
}
