import { Column, Entity, PrimaryColumn } from 'typeorm';
import { TimestampColumn } from '../database/columns';
import type { DeclaredScope } from './scopes';

/** A service that accepts Gatehouse's access tokens, registered by the platform operator (docs/resource-servers.md). */
@Entity({ name: 'resource_servers' })
export class ResourceServer {
  /** Also its OAuth `client_id` at introspection. */
  @PrimaryColumn({ type: 'varchar', length: 36 })
  id: string;

  @Column({ type: 'varchar', length: 255 })
  name: string;

  /** The `aud` of the tokens minted for it (RFC 8707 `resource`): an absolute URI, unique. */
  @Column({ type: 'varchar', length: 255 })
  audience: string;

  /** HMAC-SHA256(pepper, client secret) as 64 hex digits; the secret itself is never stored. */
  @Column({ name: 'secret_hash', type: 'varchar', length: 64 })
  secretHash: string;

  /**
   * The scopes it declares (docs/mcp.md#register-the-mcp-server-with-its-scopes), a JSON array as text; empty: its
   * tokens carry Gatehouse's permissions.
   */
  @Column({ type: 'text', transformer: { to: JSON.stringify, from: (value: string) => JSON.parse(value) as unknown } })
  scopes: DeclaredScope[];

  @TimestampColumn({ name: 'created_at' })
  createdAt: Date;

  @TimestampColumn({ name: 'secret_rotated_at' })
  secretRotatedAt: Date;
}
