/** Whose credentials: every query on a user's credentials is scoped by both. */
export interface OwnerIds {
  userId: string;
  organizationId: string;
}

/** The caller acting on its own credentials. */
export interface CredentialOwner extends OwnerIds {
  /** The credential behind the caller's access token, if any (for the audit trail). */
  credentialId?: string;
}

/** Whether the credential is this owner's (user and organization). */
export function ownedBy(credential: OwnerIds, owner: OwnerIds): boolean {
  return credential.userId === owner.userId && credential.organizationId === owner.organizationId;
}

/** An audit entry's actor: the caller, and the credential behind its access token. */
export function actor(owner: CredentialOwner): {
  organizationId: string;
  actorUserId: string;
  actorApiKeyId: string | null;
} {
  return { organizationId: owner.organizationId, actorUserId: owner.userId, actorApiKeyId: owner.credentialId ?? null };
}

/**
 * The UnitOfWork queue of the owner's writes that take the owner's lock: creations of every kind and a member's
 * removal wait here rather than on the database lock with a connection each (operations.md#transactions).
 */
export function ownerQueue(owner: OwnerIds): string {
  return `credential-owner:${owner.organizationId}:${owner.userId}`;
}
