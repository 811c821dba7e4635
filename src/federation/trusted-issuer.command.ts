import type { TrustedIssuer } from './trusted-issuer.entity';
import type { NewTrustedIssuer, TrustedIssuersService } from './trusted-issuers.service';

/** The `trusted-issuer` commands of the admin CLI (docs/federation.md#the-admin-cli): never the client secret. */
export interface TrustedIssuerView {
  id: string;
  organization_id: string;
  issuer: string;
  kind: TrustedIssuer['kind'];
  audience: string;
  client_id: string | null;
  email_domains: string[];
  jit_role: TrustedIssuer['jitRole'];
  allowed_origins: string[];
  created_at: string;
}

export function trustedIssuerView(entry: TrustedIssuer): TrustedIssuerView {
  return {
    id: entry.id,
    organization_id: entry.organizationId,
    issuer: entry.issuer,
    kind: entry.kind,
    audience: entry.audience,
    client_id: entry.clientId,
    email_domains: entry.emailDomains,
    jit_role: entry.jitRole,
    allowed_origins: entry.allowedOrigins,
    created_at: entry.createdAt.toISOString(),
  };
}

/** The options as commander names them (`--email-domain` repeated: `emailDomain`). */
export type AddTrustedIssuerOptions = Omit<NewTrustedIssuer, 'organization' | 'emailDomains' | 'allowedOrigins'> & {
  org: string;
  emailDomain: string[];
  allowOrigin: string[];
};

export async function addTrustedIssuer(
  issuers: TrustedIssuersService,
  { org, emailDomain, allowOrigin, ...options }: AddTrustedIssuerOptions,
): Promise<{ trusted_issuer: TrustedIssuerView }> {
  const entry = await issuers.add({
    ...options,
    organization: org,
    emailDomains: emailDomain,
    allowedOrigins: allowOrigin,
  });
  return { trusted_issuer: trustedIssuerView(entry) };
}

export async function listTrustedIssuers(
  issuers: TrustedIssuersService,
  options: { org: string },
): Promise<{ trusted_issuers: TrustedIssuerView[] }> {
  return { trusted_issuers: (await issuers.list(options.org)).map(trustedIssuerView) };
}

/** The entry removed, and how many workload identities that named it were revoked with it. */
export async function removeTrustedIssuer(
  issuers: TrustedIssuersService,
  options: { id: string },
): Promise<{ removed: TrustedIssuerView; revoked_workload_identities: number }> {
  const { entry, revokedWorkloadIdentities } = await issuers.remove(options.id);
  return { removed: trustedIssuerView(entry), revoked_workload_identities: revokedWorkloadIdentities };
}
