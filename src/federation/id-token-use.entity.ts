import { Entity, PrimaryColumn } from 'typeorm';
import { TimestampColumn } from '../database/columns';

/** A person's ID token that has been used once, kept until it expires (id-token-uses.ts, docs/federation.md). */
@Entity({ name: 'id_token_uses' })
export class IdTokenUse {
  /** SHA-256 of the token's issuer and its jti (or its signed part) as 64 hex digits (idTokenKey, id-token-uses.ts). */
  @PrimaryColumn({ name: 'token_key', type: 'varchar', length: 64 })
  tokenKey: string;

  @TimestampColumn({ name: 'expires_at' })
  expiresAt: Date;
}
