import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * `console_sign_in_links.binding_hash`: the SHA-256 of the browser-binding cookie of the single sign-on that made the
 * link (docs/console.md#single-sign-on). Such a link is traded only with that cookie, so that a link someone else got
 * at the end of their own sign-in signs no one else in (login CSRF). Null: an administrator's link (`console-link`),
 * which any browser may open.
 */
export class SignInLinkBinding1765850000000 implements MigrationInterface {
  name = 'SignInLinkBinding1765850000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE console_sign_in_links ADD COLUMN binding_hash varchar(64) NULL`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE console_sign_in_links DROP COLUMN binding_hash`);
  }
}
