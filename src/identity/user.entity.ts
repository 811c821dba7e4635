import { Entity, PrimaryColumn, Column } from 'typeorm';
import { TimestampColumn } from '../database/columns';

@Entity({ name: 'users' })
export class User {
  @PrimaryColumn({ type: 'varchar', length: 36 })
  id: string;

  /** Stored lower-cased: one account per address whatever its spelling. */
  @Column({ type: 'varchar', length: 320 })
  email: string;

  @TimestampColumn({ name: 'created_at' })
  createdAt: Date;
}
