import { Column, Entity, PrimaryColumn, ValueTransformer } from 'typeorm';
import { TimestampColumn } from '../database/columns';
import type { Role } from '../identity/roles';

/** What an issuer is trusted for: its people's single sign-on, or its workloads' tokens (docs/federation.md). */
export const ISSUER_KINDS = ['people', 'workloads'] as const;
export type IssuerKind = (typeof ISSUER_KINDS)[number];

/** How Gatehouse authenticates at a people issuer's token endpoint (OAuth 2.0 client authentication). */
export const TOKEN_ENDPOINT_AUTH_METHODS = ['client_secret_basic', 'client_secret_post'] as const;
export type TokenEndpointAuthMethod = (typeof TOKEN_ENDPOINT_AUTH_METHODS)[number];

/** A list as JSON text on both databases. */
const jsonList: ValueTransformer = {
  to: (value: string[] | undefined) => (value === undefined ? undefined : JSON.stringify(value)),
  from: (value: string) => JSON.parse(value) as string[],
};

/**
 * An identity provider an organization trusts (docs/federation.md#trusted-issuers). Unique per (organization, issuer,
 * kind); an issuer of kind `people` serves one organization. The schema is the migration's; every query is in
 * trusted-issuers.repository.ts.
 */
@Entity({ name: 'trusted_issuers' })
export class TrustedIssuer {
  @PrimaryColumn({ type: 'varchar', length: 36 })
  id: string;

  @Column({ name: 'organization_id', type: 'varchar', length: 36 })
  organizationId: string;

  /** Compared exactly with the `iss` of a token and the `issuer` of the discovery document. */
  @Column({ type: 'varchar', length: 255 })
  issuer: string;

  @Column({ type: 'varchar', length: 16 })
  kind: IssuerKind;

  /** The `aud` a token must contain: the client id (people), or by default Gatehouse's issuer URL (workloads). */
  @Column({ type: 'varchar', length: 255 })
  audience: string;

  @Column({ name: 'client_id', type: 'varchar', length: 255, nullable: true })
  clientId: string | null;

  /** AES-256-GCM, sealed as provider credentials are (integrations/credential-cipher.ts); never shown. */
  @Column({ name: 'client_secret_encrypted', type: 'text', nullable: true })
  clientSecretEncrypted: string | null;

  @Column({ name: 'token_endpoint_auth', type: 'varchar', length: 32, nullable: true })
  tokenEndpointAuth: TokenEndpointAuthMethod | null;

  /** Lower-case domains a signed-in person's e-mail must be in (none: any); a JSON array as text. */
  @Column({ name: 'email_domains', type: 'text', transformer: jsonList })
  emailDomains: string[];

  /**
   * The origins (`https://host[:port]`) besides the issuer's own where its discovery document may place its key set and
   * endpoints (`--allow-origin`; Google's key set is on www.googleapis.com); a JSON array as text.
   */
  @Column({ name: 'allowed_origins', type: 'text', transformer: jsonList })
  allowedOrigins: string[];

  /** The role of a member created at their first sign-in; null: people without a membership are refused. */
  @Column({ name: 'jit_role', type: 'varchar', length: 16, nullable: true })
  jitRole: Role | null;

  @TimestampColumn({ name: 'created_at' })
  createdAt: Date;
}
