import { Column, Entity, PrimaryColumn } from 'typeorm';
import { TimestampColumn } from '../../database/columns';

/** Who registered a client: the client itself (RFC 7591), or an organization's admins for an internal app. */
export const REGISTERED_CLIENT_KINDS = ['dynamic', 'organization'] as const;
export type RegisteredClientKind = (typeof REGISTERED_CLIENT_KINDS)[number];

const jsonList = {
  to: (value: string[] | undefined) => (value === undefined ? undefined : JSON.stringify(value)),
  from: (value: string) => JSON.parse(value) as string[],
};

/**
 * An OAuth client registered with Gatehouse (docs/mcp.md#clients): its client_id is this row's id, not a metadata
 * document's URL.
 */
@Entity({ name: 'oauth_clients' })
export class RegisteredClient {
  /** Its client_id. */
  @PrimaryColumn({ type: 'varchar', length: 36 })
  id: string;

  @Column({ type: 'varchar', length: 16 })
  kind: RegisteredClientKind;

  /** The organization whose admins registered it (only its members may use it); null for a dynamic one. */
  @Column({ name: 'organization_id', type: 'varchar', length: 36, nullable: true })
  organizationId: string | null;

  /** A dynamic client's own claim (untrusted text); an organization's chosen by its admins. */
  @Column({ type: 'varchar', length: 255 })
  name: string;

  /** Its redirect URIs, a JSON array as text: https, or http on a loopback host (RFC 8252), no fragment. */
  @Column({ name: 'redirect_uris', type: 'text', transformer: jsonList })
  redirectUris: string[];

  /** A confidential client's secret as HMAC-SHA256(pepper, secret), 64 hex digits; null for a public client. */
  @Column({ name: 'secret_hash', type: 'varchar', length: 64, nullable: true })
  secretHash: string | null;

  /** The admin who registered an organization's client. */
  @Column({ name: 'created_by', type: 'varchar', length: 36, nullable: true })
  createdBy: string | null;

  @TimestampColumn({ name: 'created_at' })
  createdAt: Date;

  /** Its last authorization or token request, kept to the hour. */
  @TimestampColumn({ name: 'last_used_at', nullable: true })
  lastUsedAt: Date | null;
}
