import { Entity, PrimaryColumn } from 'typeorm';
import { TimestampColumn } from '../database/columns';

/** A member an admin removed: just-in-time membership never adds them back (docs/adr/0044-one-member-lifecycle.md). */
@Entity({ name: 'member_removals' })
export class MemberRemoval {
  @PrimaryColumn({ name: 'organization_id', type: 'varchar', length: 36 })
  organizationId: string;

  @PrimaryColumn({ name: 'user_id', type: 'varchar', length: 36 })
  userId: string;

  @TimestampColumn({ name: 'removed_at' })
  removedAt: Date;
}
