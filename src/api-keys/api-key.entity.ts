import { Entity, PrimaryColumn, Column } from 'typeorm';
import { TimestampColumn } from '../database/columns';

export type ApiKeyStatus = 'ACTIVE' | 'REVOKED';

@Entity({ name: 'api_keys' })
export class ApiKey {
  @PrimaryColumn({ type: 'varchar', length: 36 })
  id: string;

  @Column({ name: 'organization_id', type: 'varchar', length: 36 })
  organizationId: string;

  @Column({ name: 'user_id', type: 'varchar', length: 36 })
  userId: string;

  @Column({ type: 'varchar', length: 255 })
  label: string;

  /** HMAC-SHA256(pepper, secret) as 64 hex digits; the secret itself is never stored. */
  @Column({ name: 'secret_hash', type: 'varchar', length: 64 })
  secretHash: string;

  @Column({ type: 'varchar', length: 16 })
  status: ApiKeyStatus;

  @TimestampColumn({ name: 'created_at' })
  createdAt: Date;

  @TimestampColumn({ name: 'updated_at' })
  updatedAt: Date;

  @TimestampColumn({ name: 'last_used_at', nullable: true })
  lastUsedAt: Date | null;

  @TimestampColumn({ name: 'revoked_at', nullable: true })
  revokedAt: Date | null;
}
