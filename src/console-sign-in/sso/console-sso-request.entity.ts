import { Column, Entity, PrimaryColumn } from 'typeorm';
import { TimestampColumn } from '../../database/columns';

/** A single sign-on request under way, from its redirect to its callback; consumed once (docs/console.md). */
@Entity({ name: 'console_sso_requests' })
export class ConsoleSsoRequest {
  @PrimaryColumn({ type: 'varchar', length: 36 })
  id: string;

  /** The hash of `state`, the key the callback finds the request by. */
  @Column({ name: 'state_hash', type: 'varchar', length: 64 })
  stateHash: string;

  /** The hash of the browser-binding cookie. */
  @Column({ name: 'binding_hash', type: 'varchar', length: 64 })
  bindingHash: string;

  @Column({ name: 'organization_id', type: 'varchar', length: 36 })
  organizationId: string;

  @Column({ name: 'trusted_issuer_id', type: 'varchar', length: 36 })
  trustedIssuerId: string;

  @Column({ type: 'varchar', length: 64 })
  nonce: string;

  /** The PKCE code verifier the callback sends to the token endpoint. */
  @Column({ name: 'code_verifier', type: 'varchar', length: 128 })
  codeVerifier: string;

  @TimestampColumn({ name: 'created_at' })
  createdAt: Date;

  @TimestampColumn({ name: 'expires_at' })
  expiresAt: Date;

  @TimestampColumn({ name: 'used_at', nullable: true })
  usedAt: Date | null;
}
