import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { AuditService } from '../audit/audit.service';
import type { RequestContext } from '../audit/request-context';
import { AppError, permissionDenied, unauthenticatedBearer } from '../common/errors';
import { InjectConfig, InjectSecrets } from '../config/config.module';
import type { AppConfiguration } from '../config/configuration';
import type { Secrets } from '../config/local-secrets';
import { UnitOfWork } from '../database/unit-of-work';
import { earliest, latestExpiry, MIN_KEY_LIFETIME_MS, requestedExpiry } from '../identity/credential-lifetime';
import { IdentityService } from '../identity/identity.service';
import type { Organization } from '../identity/organization.entity';
import { DEFAULT_KEY_SCOPES, Permission, PermissionMask, permissionMask } from '../identity/roles';
import { ApiKeyCodec } from './api-key-codec';
import { SecretHasher } from '../common/secret-hasher';
import { actor, CredentialOwner, ownedBy, ownerQueue } from '../credentials/credential-owner';
import { CredentialsService } from '../credentials/credentials.service';
import { ApiKey, displayStatus } from './api-key.entity';
import { ApiKeysRepository, KeyCredential } from './api-keys.repository';
import { allowedCidrsOf, allowedCidrsToStore, KeyRateLimit, rateLimitOf } from './key-policies';
import { usageUserAgent } from './usage/key-use';

/** Whose keys: every query on a user's keys is scoped by both. */
export type KeyOwner = CredentialOwner;

/** The caller of a creation or rotation: whose keys, and what the request may do (Principal.permissions). */
export interface KeyCreator extends KeyOwner {
  permissions: PermissionMask;
  /** With an access token, its credential's expiry (null: none): the keys it makes expire no later. */
  credentialExpiresAtMs?: number | null;
}

/** A creation's optional fields, as the body gave them (validated syntax). */
export interface NewKeyInput {
  label: string;
  /** Absent: the defaults the creating request has (docs/api.md#scopes). */
  scopes?: Permission[];
  /** Absent or null: none, or the organization's maximum under a key policy. */
  expiresAt?: string | null;
  /** Absent or null: any address (docs/api.md#allowlists-and-rate-limits). */
  allowedCidrs?: string[] | null;
  /** Absent or null: no limit. */
  rateLimit?: KeyRateLimit | null;
}

export interface RotationInput {
  /** 0: the old key is revoked at once. */
  gracePeriodSeconds: number;
  /** Absent: the old key's lifetime from now (docs/api.md#post-v1user-api-keysidrotate); null: none (within the policy). */
  expiresAt?: string | null;
}

export type { KeyCredential };
// The lifetime rules are identity's, shared with workload identities (identity/credential-lifetime.ts).
export { MIN_KEY_LIFETIME_MS };

@Injectable()
export class ApiKeysService {
  readonly codec: ApiKeyCodec;
  private readonly hasher: SecretHasher;
  /** What an unknown key id's secret is compared with: the hash of a secret never issued. */
  private readonly unknownKeyHash: string;
  private readonly maxActivePerUser: number;

  constructor(
    private readonly keys: ApiKeysRepository,
    private readonly credentials: CredentialsService,
    private readonly audit: AuditService,
    private readonly unitOfWork: UnitOfWork,
    private readonly identity: IdentityService,
    @InjectConfig() config: AppConfiguration,
    @InjectSecrets() secrets: Secrets,
  ) {
    this.codec = new ApiKeyCodec(config.apiKeys.environment);
    this.hasher = new SecretHasher(secrets.apiKeyPepper);
    this.unknownKeyHash = this.hasher.hash(ApiKeyCodec.newSecret());
    this.maxActivePerUser = config.apiKeys.maxActivePerUser;
  }

  /** docs/api.md#post-v1user-api-keys: the returned value is the only time the secret exists outside the caller. */
  async create(
    creator: KeyCreator,
    input: NewKeyInput,
    request?: RequestContext,
  ): Promise<{ key: ApiKey; value: string }> {
    const now = new Date();
    const scopes = input.scopes === undefined ? creator.permissions & DEFAULT_KEY_SCOPES : permissionMask(input.scopes);
    if ((scopes & ~creator.permissions) !== 0) throw permissionDenied('scopes_exceed_permissions');
    const organization = await this.identity.organizationById(creator.organizationId);
    const expiresAt = requestedExpiry(input.expiresAt ?? null, now, this.latestExpiry(creator, organization, now));
    const policies = {
      allowedCidrs: allowedCidrsToStore(input.allowedCidrs ?? null, organization),
      rateLimit: input.rateLimit ?? null,
    };
    const { key, secret } = this.newKey(creator, input.label, scopes, expiresAt, now, policies);
    const created = await this.unitOfWork.run(
      async (tx) => {
        if (!(await this.keys.insertWithinActiveCap(key, this.maxActivePerUser, tx))) return false;
        await this.audit.record(
          { action: 'api_key.created', ...actor(creator), targetType: 'api_key', targetId: key.id, request },
          tx,
        );
        return true;
      },
      // A burst waits here, not on the owner's database lock with a connection each (operations.md#transactions).
      { queueKey: ownerQueue(creator) },
    );
    if (!created) throw await this.creationRefused(creator);
    return { key, value: this.codec.format(key.id, secret) };
  }

  /** docs/api.md#post-v1user-api-keysidrotate: the old key's change, the new key and its audit entry commit together. */
  async rotate(
    creator: KeyCreator,
    id: string,
    input: RotationInput,
    request?: RequestContext,
  ): Promise<{ key: ApiKey; value: string; previous: ApiKey }> {
    const old = await this.keys.findById(id);
    if (old === undefined || !ownedBy(old, creator)) throw new AppError('api_key_not_found');
    const now = new Date();
    if ((old.scopes & ~creator.permissions) !== 0) throw permissionDenied('scopes_exceed_permissions');
    if (displayStatus(old, now.getTime()) !== 'ACTIVE') throw keyNotActive();
    const organization = await this.identity.organizationById(creator.organizationId);
    // The new key keeps the old one's allowlist and rate limit, within the organization's policy as it is now.
    const policies = {
      allowedCidrs: allowedCidrsToStore(allowedCidrsOf(old.allowedCidrs), organization),
      rateLimit: rateLimitOf(old),
    };
    const latest = this.latestExpiry(creator, organization, now);
    let expiresAt: Date | null;
    if (input.expiresAt !== undefined) {
      expiresAt = requestedExpiry(input.expiresAt, now, latest);
    } else if (old.expiresAt !== null) {
      // The old key's lifetime again, from now, at least the minimum and within the latest allowed.
      const lifetime = Math.max(old.expiresAt.getTime() - old.createdAt.getTime(), MIN_KEY_LIFETIME_MS);
      expiresAt = earliest(new Date(now.getTime() + lifetime), latest);
    } else {
      expiresAt = latest;
    }
    const { key, secret } = this.newKey(creator, old.label, old.scopes, expiresAt, now, policies);
    const graceEndsAt =
      input.gracePeriodSeconds === 0 ? null : new Date(now.getTime() + input.gracePeriodSeconds * 1000);
    await this.unitOfWork.run(
      async (tx) => {
        // The owner's lock first, then the old key's row: concurrent rotations of one key follow each other.
        await this.keys.lockOwner(creator, tx);
        const retired = await this.keys.retire(creator, id, key.id, now, graceEndsAt, tx);
        if (retired === undefined) throw keyNotActive();
        if (!(await this.keys.insertWithinActiveCap(key, this.maxActivePerUser, tx, id))) {
          throw await this.creationRefused(creator);
        }
        const rotated = {
          action: 'api_key.rotated' as const,
          ...actor(creator),
          targetType: 'api_key' as const,
          targetId: key.id,
          previousApiKeyId: id,
          request,
        };
        // Without a grace period the old key is revoked now, and recorded so; with one, its new expiry is recorded.
        // Either way the revocation feed reports it (docs/adr/0031-revocation-feed-in-production.md).
        const revoked = { ...rotated, action: 'api_key.revoked' as const, targetId: id, previousApiKeyId: null };
        await this.audit.recordAll(
          graceEndsAt === null
            ? [rotated, { ...revoked, reason: 'rotated' }]
            : [{ ...rotated, previousApiKeyExpiresAt: retired.expiresAt }],
          tx,
        );
      },
      { queueKey: ownerQueue(creator) },
    );
    return {
      key,
      value: this.codec.format(key.id, secret),
      previous: await this.credentials.get(this.keys, creator, id),
    };
  }

  /** The key with this id and its owner's membership, for the token path's rules (auth/key-exchange.ts). */
  credential(id: string): Promise<KeyCredential | undefined> {
    return this.keys.findCredential(id);
  }

  /**
   * Whether `secret` is the one `hash` was made from, in constant time; with no hash (an unknown key id) it is
   * compared with a stand-in, so that the time of the answer does not tell whether a key id exists.
   */
  secretMatches(secret: string, hash: string | undefined): boolean {
    return this.hasher.matches(secret, hash ?? this.unknownKeyHash);
  }

  /** A successful exchange (docs/api.md#usage-fields): kept in memory, written in CredentialUseRecorder's next batch. */
  recordUse(id: string, clientAddress: string | undefined, userAgent: string | undefined): void {
    this.credentials.recordUse(this.keys, id, clientAddress ?? null, usageUserAgent(userAgent));
  }

  /** Why insertWithinActiveCap said no: the owner is no longer a member (401), or is at the cap (400). */
  private async creationRefused(owner: KeyOwner): Promise<AppError> {
    if ((await this.identity.access(owner.organizationId, owner.userId)) === null)
      return unauthenticatedBearer('member_removed');
    return new AppError('api_key_limit_reached');
  }

  /** The latest expiry allowed: the organization's key policy's, and an access token's key's own (null: none). */
  private latestExpiry(creator: KeyCreator, organization: Organization, now: Date): Date | null {
    return latestExpiry(now, organization.maxKeyLifetimeDays, creator.credentialExpiresAtMs);
  }

  private newKey(
    owner: KeyOwner,
    label: string,
    scopes: PermissionMask,
    expiresAt: Date | null,
    now: Date,
    policies: { allowedCidrs: string | null; rateLimit: KeyRateLimit | null },
  ): { key: ApiKey; secret: string } {
    const secret = ApiKeyCodec.newSecret();
    const key = Object.assign(new ApiKey(), {
      id: randomUUID(),
      organizationId: owner.organizationId,
      userId: owner.userId,
      label,
      secretHash: this.hasher.hash(secret),
      status: 'ACTIVE' as const,
      scopes,
      expiresAt,
      createdAt: now,
      updatedAt: now,
      lastUsedAt: null,
      lastUsedIp: null,
      lastUsedUserAgent: null,
      revokedAt: null,
      replacedBy: null,
      allowedCidrs: policies.allowedCidrs,
      rateLimitRequests: policies.rateLimit?.requests ?? null,
      rateLimitWindowSeconds: policies.rateLimit?.windowSeconds ?? null,
    });
    return { key, secret };
  }
}

const keyNotActive = (): AppError => new AppError('api_key_not_active');

export { ownedBy };
