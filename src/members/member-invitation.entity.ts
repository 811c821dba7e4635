import { Column, Entity, PrimaryColumn } from 'typeorm';
import { TimestampColumn } from '../database/columns';
import type { Role } from '../identity/roles';

/**
 * An admin's invitation to join the organization (docs/api.md#members): a one-time link whose code's SHA-256 alone is
 * stored, used once before `expires_at`, which signs the person in as a member with `role`.
 */
@Entity({ name: 'member_invitations' })
export class MemberInvitation {
  @PrimaryColumn({ type: 'varchar', length: 36 })
  id: string;

  @Column({ name: 'organization_id', type: 'varchar', length: 36 })
  organizationId: string;

  /** The invited person (a user row is made for the address at the invitation). */
  @Column({ name: 'user_id', type: 'varchar', length: 36 })
  userId: string;

  @Column({ type: 'varchar', length: 16 })
  role: Role;

  /** The SHA-256 of the link's code; the code itself is never stored. */
  @Column({ name: 'code_hash', type: 'varchar', length: 64 })
  codeHash: string;

  /** The admin who invited; null when none is known. */
  @Column({ name: 'invited_by_user_id', type: 'varchar', length: 36, nullable: true })
  invitedByUserId: string | null;

  @TimestampColumn({ name: 'created_at' })
  createdAt: Date;

  @TimestampColumn({ name: 'expires_at' })
  expiresAt: Date;

  @TimestampColumn({ name: 'accepted_at', nullable: true })
  acceptedAt: Date | null;
}
