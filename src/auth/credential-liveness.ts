import { Injectable } from '@nestjs/common';
import { ApiKeysService } from '../api-keys/api-keys.service';
import { isExpired } from '../api-keys/api-key.entity';
import type { KeyRateLimit } from '../api-keys/key-policies';
import type { MembershipAccess } from '../identity/member-access';
import type { PermissionMask } from '../identity/roles';
import { WorkloadIdentitiesService } from '../workload-identities/workload-identities.service';
import { GrantsService } from '../grants/grants.service';

/**
 * The kinds of credential an access token is minted from, named by the token's `client_type` claim (none: an API key),
 * or a person's grant to an OAuth client when it carries `grant_id` (docs/mcp.md). A new kind is a name here and one
 * CredentialLiveness in CredentialKinds.
 */
export type CredentialKind = 'api_key' | 'workload_identity' | 'grant';

/** Why a token's credential is not live: the same reasons whatever its kind. */
export type CredentialRefusalReason =
  'credential_not_found' | 'credential_revoked' | 'credential_expired' | 'member_removed';

/** What every kind of credential has, as its liveness needs it, with its owner's membership read in the same query. */
export interface CredentialState {
  userId: string;
  organizationId: string;
  status: string;
  scopes: PermissionMask;
  /** null: never expires. */
  expiresAtMs: number | null;
  /** Comma-separated CIDRs as stored; null: any address. */
  allowedCidrs: string | null;
  rateLimit: KeyRateLimit | null;
  /** null: the owner is no longer a member of the credential's organization. */
  ownerAccess: MembershipAccess | null;
}

/** A credential that is live now, for the token's owner. */
export type LiveCredential = CredentialState & { ownerAccess: MembershipAccess };

/** One kind's read of a credential by id (one query, batched per kind), undefined when there is no such credential. */
export interface CredentialLiveness {
  read(id: string): Promise<CredentialState | undefined>;
  /**
   * The kind's own rule, after the common ones passed (a grant's client still registered, ...): a reason to refuse, or
   * null. Optional: API keys and workload identities have none.
   */
  refusal?(credential: LiveCredential, nowMs: number): CredentialRefusalReason | null;
}

/**
 * The liveness rules every kind shares, in one place: the credential exists and is the token owner's, its owner is
 * still a member, it is ACTIVE and not expired (docs/adr/0048-one-token-authenticator.md).
 */
export function credentialRefusal(
  found: CredentialState | undefined,
  owner: { userId: string; organizationId: string },
  nowMs: number,
): CredentialRefusalReason | null {
  if (found === undefined || found.userId !== owner.userId || found.organizationId !== owner.organizationId) {
    return 'credential_not_found';
  }
  if (found.ownerAccess === null) return 'member_removed';
  if (found.status !== 'ACTIVE') return 'credential_revoked';
  if (isExpired(found.expiresAtMs, nowMs)) return 'credential_expired';
  return null;
}

/** Each kind's liveness, by the name a token carries: the one registry the authenticator reads. */
@Injectable()
export class CredentialKinds {
  private readonly kinds: Record<CredentialKind, CredentialLiveness>;

  constructor(apiKeys: ApiKeysService, identities: WorkloadIdentitiesService, grants: GrantsService) {
    this.kinds = {
      api_key: {
        read: async (id) => {
          const found = await apiKeys.credential(id);
          if (found === undefined) return undefined;
          const { key } = found;
          return {
            userId: key.userId,
            organizationId: key.organizationId,
            status: key.status,
            scopes: key.scopes,
            expiresAtMs: key.expiresAtMs,
            allowedCidrs: key.allowedCidrs,
            rateLimit: key.rateLimit,
            ownerAccess: found.ownerAccess,
          };
        },
      },
      workload_identity: {
        read: async (id) => {
          const found = await identities.credential(id);
          if (found === undefined) return undefined;
          const { identity } = found;
          return {
            userId: identity.userId,
            organizationId: identity.organizationId,
            status: identity.status,
            scopes: identity.scopes,
            expiresAtMs: identity.expiresAtMs,
            allowedCidrs: null,
            rateLimit: null,
            ownerAccess: found.ownerAccess,
          };
        },
      },
      // A grant has no permissions of its own (its token carries resource-server scopes), no expiry (its refresh
      // tokens do), no allowlist and no rate limit: live while active and its person a member.
      grant: {
        read: async (id) => {
          const found = await grants.credential(id);
          if (found === undefined) return undefined;
          return {
            userId: found.userId,
            organizationId: found.organizationId,
            status: found.status === 'active' ? 'ACTIVE' : 'REVOKED',
            scopes: 0,
            expiresAtMs: null,
            allowedCidrs: null,
            rateLimit: null,
            ownerAccess: found.ownerAccess,
          };
        },
      },
    };
  }

  of(kind: CredentialKind): CredentialLiveness {
    return this.kinds[kind];
  }
}
