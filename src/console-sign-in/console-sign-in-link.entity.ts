import { Column, Entity, PrimaryColumn } from 'typeorm';
import { TimestampColumn } from '../database/columns';

/** A one-time sign-in link to the web console (docs/console.md): valid until expires_at, used once. */
@Entity({ name: 'console_sign_in_links' })
export class ConsoleSignInLink {
  @PrimaryColumn({ type: 'varchar', length: 36 })
  id: string;

  /** The hash of the link's code; the code itself is never stored. */
  @Column({ name: 'code_hash', type: 'varchar', length: 64 })
  codeHash: string;

  @Column({ name: 'organization_id', type: 'varchar', length: 36 })
  organizationId: string;

  @Column({ name: 'user_id', type: 'varchar', length: 36 })
  userId: string;

  @TimestampColumn({ name: 'created_at' })
  createdAt: Date;

  @TimestampColumn({ name: 'expires_at' })
  expiresAt: Date;

  @TimestampColumn({ name: 'used_at', nullable: true })
  usedAt: Date | null;

  /** The reason its `console.signed_in` records: null for an administrator's link, `sso:<trusted issuer id>` else. */
  @Column({ name: 'sign_in_reason', type: 'varchar', length: 64, nullable: true })
  signInReason: string | null;

  /** The hash of the browser binding the link must be used with; null: any browser. */
  @Column({ name: 'binding_hash', type: 'varchar', length: 64, nullable: true })
  bindingHash: string | null;
}
