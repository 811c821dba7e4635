import { Column, Entity, PrimaryColumn } from 'typeorm';
import { CredentialBase } from '../credentials/credential.entity';
import { TimestampColumn } from '../database/columns';

export type GrantStatus = 'active' | 'revoked';

/**
 * A person's consent to a client for one resource server (docs/mcp.md#grants): a kind of credential
 * (docs/adr/0052-one-credential-core.md), the one the authorization code and refresh grants live on, revoked by the
 * person, an admin or the member's removal. Its scopes are the resource server's, as text; no label, expiry or address.
 */
@Entity({ name: 'oauth_grants' })
export class OAuthGrant extends CredentialBase<GrantStatus> {
  /** The client's id: a Client ID Metadata Document's https URL, or a registered client's id. */
  @Column({ name: 'client_id', type: 'varchar', length: 512 })
  clientId: string;

  /** The name the client's document gave (untrusted text, shown beside the client id's host). */
  @Column({ name: 'client_name', type: 'varchar', length: 255 })
  clientName: string;

  /** The resource server's audience. */
  @Column({ type: 'varchar', length: 255 })
  resource: string;

  /** The granted scopes, space-separated, sorted. */
  @Column({ type: 'text' })
  scope: string;
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

/**
 * A chain of refresh tokens (docs/mcp.md#authorization-code), begun by a code's redemption: the SHA-256 of its current
 * token only, replaced at each refresh; a token that names the chain but is not the current one is a reuse. Deleted
 * when its grant ends.
 */
@Entity({ name: 'oauth_refresh_chains' })
export class OAuthRefreshChain {
  @PrimaryColumn({ type: 'varchar', length: 36 })
  id: string;

  @Column({ name: 'grant_id', type: 'varchar', length: 36 })
  grantId: string;

  @Column({ name: 'token_hash', type: 'varchar', length: 64 })
  tokenHash: string;

  @Column({ type: 'text' })
  scope: string;

  @TimestampColumn({ name: 'created_at' })
  createdAt: Date;

  @TimestampColumn({ name: 'refreshed_at', nullable: true })
  refreshedAt: Date | null;
}
