import { Column, Entity, PrimaryColumn } from 'typeorm';
import { TimestampColumn } from '../database/columns';

/**
 * A stream a verifier instance made for itself (SSF stream management, docs/adr/0031-revocation-feed-in-production.md):
 * it receives every event beside its resource server's default stream, and is deleted when idle.
 */
@Entity({ name: 'ssf_streams' })
export class SsfStream {
  @PrimaryColumn({ type: 'varchar', length: 36 })
  id: string;

  @Column({ name: 'resource_server_id', type: 'varchar', length: 36 })
  resourceServerId: string;

  @Column({ type: 'varchar', length: 200, nullable: true })
  description: string | null;

  @TimestampColumn({ name: 'created_at' })
  createdAt: Date;

  /** The creation counts as the first poll; written at most once a minute after that. */
  @TimestampColumn({ name: 'last_polled_at' })
  lastPolledAt: Date;
}
