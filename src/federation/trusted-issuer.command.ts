import { justInTimeRole } from './people';
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

/**
 * The entry added; for a people issuer also `redirect_uri`, the one to register at the identity provider as its
 * discovery document says now (docs/console.md#single-sign-on).
 */
export async function addTrustedIssuer(
  issuers: TrustedIssuersService,
  { org, emailDomain, allowOrigin, ...options }: AddTrustedIssuerOptions,
): Promise<{ trusted_issuer: TrustedIssuerView; redirect_uri?: string }> {
  const { entry, redirectUri } = await issuers.addDiscovered({
    ...options,
    organization: org,
    emailDomains: emailDomain,
    allowedOrigins: allowOrigin,
  });
  return { trusted_issuer: trustedIssuerView(entry), ...(redirectUri === null ? {} : { redirect_uri: redirectUri }) };
}

/**
 * The organization's entries, and `warnings` when some say what they no longer do: a people issuer with a just-in-time
 * role and no e-mail domain (made before just-in-time membership required them) adds nobody.
 */
export async function listTrustedIssuers(
  issuers: TrustedIssuersService,
  options: { org: string },
): Promise<{ trusted_issuers: TrustedIssuerView[]; warnings?: string[] }> {
  const entries = await issuers.list(options.org);
  const warnings = entries
    .filter((entry) => entry.jitRole !== null && justInTimeRole(entry) === null)
    .map(
      (entry) =>
        `trusted issuer ${entry.id} (${entry.issuer}) has jit_role ${entry.jitRole} but no email domain: it adds ` +
        'nobody just in time (people without a membership get "no access"); to add people again, remove it and add ' +
        'it with --email-domain',
    );
  return { trusted_issuers: entries.map(trustedIssuerView), ...(warnings.length > 0 ? { warnings } : {}) };
}

/** The entry with the allowed origins given (none: only the issuer's own), once its discovery passes with them. */
export async function setTrustedIssuerOrigins(
  issuers: TrustedIssuersService,
  options: { id: string; allowOrigin: string[] },
): Promise<{ trusted_issuer: TrustedIssuerView }> {
  return { trusted_issuer: trustedIssuerView(await issuers.setAllowedOrigins(options.id, options.allowOrigin)) };
}

/** The entry removed, and how many workload identities that named it were revoked with it. */
export async function removeTrustedIssuer(
  issuers: TrustedIssuersService,
  options: { id: string },
): Promise<{ removed: TrustedIssuerView; revoked_workload_identities: number }> {
  const { entry, revokedWorkloadIdentities } = await issuers.remove(options.id);
  return { removed: trustedIssuerView(entry), revoked_workload_identities: revokedWorkloadIdentities };
}
