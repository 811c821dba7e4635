import type { AuditAction, AuditEvent } from '../audit/audit-event.entity';
import type { AppError } from '../common/errors';
import { MemberAccessColumns, MembershipAccess, toMembershipAccess } from '../identity/member-access';
import type { PermissionMask } from '../identity/roles';
import type { Transaction } from '../database/unit-of-work';
import type { Credential, CredentialBase } from './credential.entity';
import type { OwnerIds } from './credential-owner';

/**
 * What every kind of credential tells the core (docs/adr/0052-one-credential-core.md#a-new-kind): how it is named in the
 * audit trail, its entity (its table, read through EntityRows), its owner lock and the usage fields it keeps. Enough for
 * a member's removal, a token's liveness and the usage fields (KindStore).
 */
export interface StoredKind<T extends CredentialBase = CredentialBase> {
  /** The audit trail's target type; `<name>.revoked` is the action a revocation records (a SET on the feed). */
  name: NonNullable<AuditEvent['targetType']>;
  revokedAction: AuditAction;
  entity: new () => T;
  /** First half of the owner's PostgreSQL advisory-lock key (the second: the owner's ids, hashed). */
  ownerLockClass: number;
  /** Whether its usage fields keep the client address (`last_used_ip`) besides `last_used_at`. */
  keepsIp: boolean;
  /** Whether its usage fields keep the User-Agent too (`last_used_user_agent`). */
  keepsUserAgent: boolean;
}

/**
 * A kind with every shared column (Credential): the core does the rest, lists, revocation (by the owner, an admin, a
 * member's removal), usage fields, routes.
 */
export interface CredentialKind<T extends Credential> extends StoredKind<T> {
  /** The indexes the organization's list reads: its ACTIVE credentials, and all of them. */
  organizationIndexes: { active: string; all: string };
  /** The error of an id that is not the caller's (or not the caller's organization's). */
  notFound(): AppError;
}

/**
 * What every kind of credential has, as a token's liveness needs it (auth/credential-liveness.ts), with its owner's
 * membership read in the same query.
 */
export interface CredentialState {
  userId: string;
  organizationId: string;
  status: string;
  scopes: PermissionMask;
  /** null: never expires. */
  expiresAtMs: number | null;
  /** Comma-separated CIDRs as stored; null: any address (or a kind without allowlists). */
  allowedCidrs: string | null;
  rateLimit: { requests: number; windowSeconds: number } | null;
  /** null: the owner is no longer a member of the credential's organization. */
  ownerAccess: MembershipAccess | null;
}

/** What a kind keeps of a credential's state besides its status; what it leaves out it does not have (none). */
export type KindState = Pick<CredentialState, 'status'> &
  Partial<Pick<CredentialState, 'scopes' | 'expiresAtMs' | 'allowedCidrs' | 'rateLimit'>>;

/** A liveness row (the credential's owner and that owner's membership, one query) and what the kind keeps as a state. */
export function credentialState(
  row: { user_id: string; organization_id: string } & MemberAccessColumns,
  own: KindState,
): CredentialState {
  return {
    userId: row.user_id,
    organizationId: row.organization_id,
    status: own.status,
    scopes: own.scopes ?? 0,
    expiresAtMs: own.expiresAtMs ?? null,
    allowedCidrs: own.allowedCidrs ?? null,
    rateLimit: own.rateLimit ?? null,
    ownerAccess: toMembershipAccess(row),
  };
}

/** What the core asks of every kind's repository (CredentialStore implements it; CredentialsRepository extends that). */
export interface KindStore {
  readonly kind: StoredKind;
  /** The credential with this id for a token's liveness (one query, batched per kind); undefined when there is none. */
  read(id: string): Promise<CredentialState | undefined>;
  /** The credential with this id, whoever owns it (batched): a kind with every shared column (CredentialsRepository). */
  findById?(id: string): Promise<Credential | undefined>;
  lockOwner(owner: OwnerIds, tx: Transaction): Promise<void>;
  revokeAllOf(owner: OwnerIds, at: Date, tx: Transaction): Promise<string[]>;
  recordLastUsed(uses: ReadonlyArray<readonly [id: string, use: CredentialUse]>): Promise<void>;
}

/**
 * One successful use of a credential, as its usage fields keep it (docs/api.md#usage-fields): `last_used_at`,
 * `last_used_ip` and, for a kind that keeps it, `last_used_user_agent` always come from the same use.
 */
export interface CredentialUse {
  at: Date;
  /** The client address as the failure limiter sees it (common/client-address.ts); null when unknown. */
  ip: string | null;
  /** The request's User-Agent as usageUserAgent cleans it; null when it had none or the kind keeps none. */
  userAgent: string | null;
  /** The kind's repository it is written through. */
  store: KindStore;
}
