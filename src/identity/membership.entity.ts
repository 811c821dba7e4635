import { Entity, PrimaryColumn, Column } from 'typeorm';
import { TimestampColumn } from '../database/columns';
import type { Role } from './roles';

@Entity({ name: 'memberships' })
export class Membership {
  @PrimaryColumn({ name: 'organization_id', type: 'varchar', length: 36 })
  organizationId: string;

  @PrimaryColumn({ name: 'user_id', type: 'varchar', length: 36 })
  userId: string;

  @Column({ type: 'varchar', length: 16 })
  role: Role;

  @TimestampColumn({ name: 'created_at' })
  createdAt: Date;

  @TimestampColumn({ name: 'updated_at' })
  updatedAt: Date;

  /** Session tokens issued before this are refused (sign-out); null: none since the membership began. */
  @TimestampColumn({ name: 'sessions_valid_after', nullable: true })
  sessionsValidAfter: Date | null;

  /** The member's last console sign-in (migration 1765900000000); null: none since. */
  @TimestampColumn({ name: 'last_signed_in_at', nullable: true })
  lastSignedInAt: Date | null;
}
