import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { AuditService } from '../audit/audit.service';
import type { RequestContext } from '../audit/request-context';
import { API_KEY_CHALLENGE, AppError, ErrorCode, Messages, notFound } from '../common/errors';
import { LIST_WINDOW, Page } from '../common/pagination';
import { InjectConfig, InjectSecrets } from '../config/config.module';
import type { AppConfiguration } from '../config/configuration';
import type { Secrets } from '../config/local-secrets';
import { UnitOfWork } from '../database/unit-of-work';
import type { MembershipAccess } from '../identity/member-access';
import type { Role } from '../identity/roles';
import { ApiKeyCodec, ParsedApiKey, SecretHasher } from './api-key-codec';
import { ApiKey } from './api-key.entity';
import { ApiKeysRepository } from './api-keys.repository';
import { LastUsedRecorder } from './last-used.recorder';

/** Whose keys: every query on a user's keys is scoped by both. */
export interface KeyOwner {
  userId: string;
  organizationId: string;
  /** The key behind the caller's access token, if any (for the audit trail). */
  apiKeyId?: string;
}

/** Why an exchange was refused, as the audit trail records it. */
export type ExchangeFailureReason =
  'missing_header' | 'wrong_scheme' | 'malformed_key' | 'invalid_credentials' | 'revoked' | 'not_a_member';

/** A refused POST /v1/token: the exact 401 of docs/api.md#errors, plus what the audit trail keeps. */
export class ExchangeRefused extends AppError {
  /** The key id the presented value named, when it was well-formed (not a secret). */
  attemptedKeyId?: string;

  constructor(
    readonly reason: ExchangeFailureReason,
    message: string,
    readonly key?: Pick<ApiKey, 'id' | 'organizationId' | 'userId'>,
  ) {
    super(ErrorCode.UNAUTHENTICATED, message, { headers: { ...API_KEY_CHALLENGE } });
  }
}

/** An ACTIVE key whose secret matched, with its owner's membership (null when no longer a member). */
export interface AuthenticatedKey {
  key: Pick<ApiKey, 'id' | 'organizationId' | 'userId'>;
  access: MembershipAccess | null;
}

export interface ListKeysQuery {
  page: number;
  limit: number;
  includeRevoked: boolean;
}

@Injectable()
export class ApiKeysService {
  readonly codec: ApiKeyCodec;
  private readonly hasher: SecretHasher;
  /** What an unknown key id's secret is compared with: the hash of a secret never issued. */
  private readonly unknownKeyHash: string;
  private readonly maxActivePerUser: number;

  constructor(
    private readonly keys: ApiKeysRepository,
    private readonly lastUsed: LastUsedRecorder,
    private readonly audit: AuditService,
    private readonly unitOfWork: UnitOfWork,
    @InjectConfig() config: AppConfiguration,
    @InjectSecrets() secrets: Secrets,
  ) {
    this.codec = new ApiKeyCodec(config.apiKeys.environment);
    this.hasher = new SecretHasher(secrets.apiKeyPepper);
    this.unknownKeyHash = this.hasher.hash(ApiKeyCodec.newSecret());
    this.maxActivePerUser = config.apiKeys.maxActivePerUser;
  }

  /**
   * Creates an ACTIVE key; the returned value is the only time the secret exists outside the caller.
   * Refused with 400 FAILED_PRECONDITION when the owner already has API_KEY_MAX_ACTIVE_PER_USER
   * active keys in the organization. The key and its audit entry are stored together or not at all.
   */
  async create(owner: KeyOwner, label: string, request?: RequestContext): Promise<{ key: ApiKey; value: string }> {
    const id = randomUUID();
    const secret = ApiKeyCodec.newSecret();
    const now = new Date();
    const key = Object.assign(new ApiKey(), {
      id,
      organizationId: owner.organizationId,
      userId: owner.userId,
      label,
      secretHash: this.hasher.hash(secret),
      status: 'ACTIVE' as const,
      createdAt: now,
      updatedAt: now,
      lastUsedAt: null,
      revokedAt: null,
    });
    const created = await this.unitOfWork.run(
      async (tx) => {
        if (!(await this.keys.insertWithinActiveCap(key, this.maxActivePerUser, tx))) return false;
        await this.audit.record(
          { action: 'api_key.created', ...this.actor(owner), targetType: 'api_key', targetId: id, request },
          tx,
        );
        return true;
      },
      // One creation per owner at a time on this instance: a burst waits here, not on the owner's
      // database lock with a pooled connection each (docs/operations.md#transactions).
      { queueKey: `api-key-owner:${owner.organizationId}:${owner.userId}` },
    );
    if (!created) throw new AppError(ErrorCode.FAILED_PRECONDITION, Messages.apiKeyLimitReached);
    return { key, value: this.codec.format(id, secret) };
  }

  /**
   * The caller's keys, newest first (created_at, then id, descending), and how many there are, both
   * within the list window (docs/api.md#conventions): the newest LIST_WINDOW keys the query
   * matches. The query DTO has checked that the page starts inside it.
   */
  async list(owner: KeyOwner, query: ListKeysQuery): Promise<Page<ApiKey>> {
    const offset = (query.page - 1) * query.limit;
    const { keys, totalCount } = await this.keys.findPageByOwner(owner, {
      limit: Math.max(0, Math.min(query.limit, LIST_WINDOW - offset)),
      offset,
      includeRevoked: query.includeRevoked,
    });
    return {
      items: keys.map((key) => this.withPendingUse(key)),
      page: query.page,
      limit: query.limit,
      totalCount,
    };
  }

  /** The caller's own key; someone else's is "not found", never "forbidden". */
  async get(owner: KeyOwner, id: string): Promise<ApiKey> {
    const key = await this.keys.findById(id);
    if (key === undefined || !ownedBy(key, owner)) throw notFound(Messages.apiKeyNotFound);
    return this.withPendingUse(key);
  }

  /**
   * Revokes at once and for good; revoking a revoked key returns it unchanged. The revocation and
   * its audit entry are stored together or not at all.
   */
  async revoke(owner: KeyOwner, id: string, request?: RequestContext): Promise<ApiKey> {
    const at = new Date();
    await this.unitOfWork.run(async (tx) => {
      if (!(await this.keys.revoke(owner, id, at, tx))) return;
      await this.audit.record(
        {
          action: 'api_key.revoked',
          reason: 'user',
          ...this.actor(owner),
          targetType: 'api_key',
          targetId: id,
          request,
        },
        tx,
      );
    });
    return this.get(owner, id);
  }

  /**
   * POST /v1/token steps 4-5 (docs/api.md#post-v1token): unknown id or wrong secret -> invalid
   * credentials; right secret of a revoked key -> revoked. The secret is compared in constant time,
   * and for an unknown id too (with a stand-in hash), so that the time of the answer does not tell
   * whether a key id exists. The owner's membership comes back from the same query, for step 6 (the
   * caller's to judge).
   */
  async authenticate(parsed: ParsedApiKey): Promise<AuthenticatedKey> {
    const found = await this.keys.findCredential(parsed.keyId);
    const matches = this.hasher.matches(parsed.secret, found?.key.secretHash ?? this.unknownKeyHash);
    if (found === undefined || !matches) {
      throw new ExchangeRefused('invalid_credentials', Messages.invalidApiKeyCredentials);
    }
    const { id, organizationId, userId, status } = found.key;
    const key = { id, organizationId, userId };
    if (status !== 'ACTIVE') throw new ExchangeRefused('revoked', Messages.apiKeyRevoked, key);
    return { key, access: found.ownerAccess };
  }

  /**
   * For a request with an access token minted from this key (every one of them, so that a
   * revocation or a role change applies at once): the owner's current role while the key is ACTIVE
   * and the owner still a member of its organization, else null. One query.
   */
  async roleThroughActiveKey(id: string, owner: KeyOwner): Promise<Role | null> {
    const found = await this.keys.findCredential(id);
    if (found === undefined || !ownedBy(found.key, owner) || found.key.status !== 'ACTIVE') return null;
    return found.ownerAccess?.role ?? null;
  }

  recordUse(id: string): void {
    this.lastUsed.record(id, new Date());
  }

  private actor(owner: KeyOwner): { organizationId: string; actorUserId: string; actorApiKeyId: string | null } {
    return { organizationId: owner.organizationId, actorUserId: owner.userId, actorApiKeyId: owner.apiKeyId ?? null };
  }

  private withPendingUse(key: ApiKey): ApiKey {
    const pending = this.lastUsed.pendingFor(key.id);
    if (pending !== undefined && (key.lastUsedAt === null || key.lastUsedAt < pending)) key.lastUsedAt = pending;
    return key;
  }
}

function ownedBy(key: Pick<ApiKey, 'userId' | 'organizationId'>, owner: KeyOwner): boolean {
  return key.userId === owner.userId && key.organizationId === owner.organizationId;
}
