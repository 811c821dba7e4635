import { Column, Entity, PrimaryColumn } from 'typeorm';
import { TimestampColumn } from '../database/columns';

/**
 * A person's consent to a client for one resource server (docs/mcp.md#grants): the credential the authorization code
 * and refresh grants live on, revoked by the person, an admin or the member's removal.
 */
@Entity({ name: 'oauth_grants' })
export class OAuthGrant {
  @PrimaryColumn({ type: 'varchar', length: 36 })
  id: string;

  @Column({ name: 'organization_id', type: 'varchar', length: 36 })
  organizationId: string;

  @Column({ name: 'user_id', type: 'varchar', length: 36 })
  userId: string;

  /** The client's id: a Client ID Metadata Document's https URL, or a registered client's id. */
  @Column({ name: 'client_id', type: 'varchar', length: 512 })
  clientId: string;

  /** The name the client's document gave (untrusted text, shown beside the client id's host). */
  @Column({ name: 'client_name', type: 'varchar', length: 255 })
  clientName: string;

  /** The resource server's audience. */
  @Column({ type: 'varchar', length: 255 })
  resource: string;

  /** The granted scopes, space-separated. */
  @Column({ type: 'text' })
  scope: string;

  @Column({ type: 'varchar', length: 16 })
  status: string;

  @TimestampColumn({ name: 'created_at' })
  createdAt: Date;

  @TimestampColumn({ name: 'last_used_at', nullable: true })
  lastUsedAt: Date | null;

  @TimestampColumn({ name: 'revoked_at', nullable: true })
  revokedAt: Date | null;
}

/** A one-use authorization code (its SHA-256 only), bound to client, redirect URI, PKCE challenge and resource. */
@Entity({ name: 'oauth_codes' })
export class OAuthCode {
  @PrimaryColumn({ name: 'code_hash', type: 'varchar', length: 64 })
  codeHash: string;

  @Column({ name: 'grant_id', type: 'varchar', length: 36 })
  grantId: string;

  @Column({ name: 'client_id', type: 'varchar', length: 512 })
  clientId: string;

  @Column({ name: 'redirect_uri', type: 'varchar', length: 2048 })
  redirectUri: string;

  @Column({ name: 'code_challenge', type: 'varchar', length: 128 })
  codeChallenge: string;

  @Column({ type: 'varchar', length: 255 })
  resource: string;

  @Column({ type: 'text' })
  scope: string;

  @TimestampColumn({ name: 'expires_at' })
  expiresAt: Date;

  @TimestampColumn({ name: 'used_at', nullable: true })
  usedAt: Date | null;
}

/** A refresh token (its SHA-256 only); a used one is kept until its grant ends, so that its reuse is recognised. */
@Entity({ name: 'oauth_refresh_tokens' })
export class OAuthRefreshToken {
  @PrimaryColumn({ name: 'token_hash', type: 'varchar', length: 64 })
  tokenHash: string;

  @Column({ name: 'grant_id', type: 'varchar', length: 36 })
  grantId: string;

  @Column({ type: 'text' })
  scope: string;

  @TimestampColumn({ name: 'created_at' })
  createdAt: Date;

  @TimestampColumn({ name: 'used_at', nullable: true })
  usedAt: Date | null;
}
