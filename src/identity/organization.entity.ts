import { Entity, PrimaryColumn, Column } from 'typeorm';
import { TimestampColumn } from '../database/columns';

export const DEFAULT_ACCESS_TOKEN_LIFETIME = 1800;
export const MIN_ACCESS_TOKEN_LIFETIME = 60;
export const MAX_ACCESS_TOKEN_LIFETIME = 86400;

@Entity({ name: 'organizations' })
export class Organization {
  @PrimaryColumn({ type: 'varchar', length: 36 })
  id: string;

  @Column({ type: 'varchar', length: 255 })
  name: string;

  @Column({ name: 'access_token_lifetime', type: 'integer' })
  accessTokenLifetime: number;

  @TimestampColumn({ name: 'created_at' })
  createdAt: Date;

  @TimestampColumn({ name: 'updated_at' })
  updatedAt: Date;
}
