import { Injectable } from '@nestjs/common';
import { isExpired } from '../credentials/credential.entity';
import type { CredentialState } from '../credentials/credential-kind';
import { CredentialKinds } from '../credentials/credential-kinds';
import type { MembershipAccess } from '../identity/member-access';

export type { CredentialState } from '../credentials/credential-kind';

/**
 * The kinds of credential an access token is minted from, named by the token's `client_type` claim (none: an API key),
 * or a person's grant to an OAuth client when it carries `grant_id` (docs/mcp.md). Each is a kind of the credential
 * core (docs/adr/0052-one-credential-core.md#a-new-kind), read through CredentialKinds.
 */
export type CredentialKind = 'api_key' | 'workload_identity' | 'grant';

/** Why a token's credential is not live: the same reasons whatever its kind. */
export type CredentialRefusalReason =
  'credential_not_found' | 'credential_revoked' | 'credential_expired' | 'member_removed';

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

const NONE: CredentialLiveness = { read: () => Promise.resolve(undefined) };

/**
 * Each kind's liveness, by the name a token carries: the credential core's kinds (credentials/credential-kinds.ts),
 * each read through its own repository. A kind the application lacks has no credential.
 */
@Injectable()
export class CredentialLivenessKinds {
  constructor(private readonly kinds: CredentialKinds) {}

  of(kind: CredentialKind): CredentialLiveness {
    return this.kinds.of(kind) ?? NONE;
  }
}
