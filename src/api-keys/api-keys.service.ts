import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { DataSource, Repository } from 'typeorm';
import { AuditService } from '../audit/audit.service';
import type { RequestContext } from '../audit/request-context';
import { API_KEY_CHALLENGE, AppError, ErrorCode, Messages, notFound } from '../common/errors';
import { Page } from '../common/pagination';
import { InjectConfig, InjectSecrets } from '../config/config.module';
import { IdLookup, Statement, toDate } from '../database/statement';
import type { AppConfiguration } from '../config/configuration';
import type { Secrets } from '../config/local-secrets';
import { IdentityService, MembershipAccess, MembershipColumns } from '../identity/identity.service';
import type { Role } from '../identity/roles';
import { ApiKeyCodec, ParsedApiKey, SecretHasher } from './api-key-codec';
import { ApiKey, ApiKeyStatus } from './api-key.entity';
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

/** A refused POST /v1/token: the exact 401 of SPEC.md section 7, plus what the audit trail keeps. */
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

/**
 * What the hot paths (the exchange, every access-token request) read of a key, with its owner's
 * membership: no label, no timestamps (PostgreSQL parses each into a Date).
 */
interface KeyMembershipRow extends MembershipColumns {
  id: string;
  organization_id: string;
  user_id: string;
  secret_hash: string;
  status: ApiKeyStatus;
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
  // The hot paths (POST /v1/token, every access-token request, GET by id) run fixed statements.
  private readonly withMembershipById: IdLookup<KeyMembershipRow>;
  private readonly byId: IdLookup<ApiKeyRow>;
  private readonly listActive: Statement<ListRow>;
  private readonly listAll: Statement<ListRow>;

  constructor(
    @InjectRepository(ApiKey) private readonly apiKeys: Repository<ApiKey>,
    private readonly lastUsed: LastUsedRecorder,
    private readonly audit: AuditService,
    private readonly identity: IdentityService,
    @InjectConfig() config: AppConfiguration,
    @InjectSecrets() secrets: Secrets,
  ) {
    this.codec = new ApiKeyCodec(config.apiKeys.environment);
    this.hasher = new SecretHasher(secrets.apiKeyPepper);
    const dataSource = apiKeys.manager.connection;
    // The hot paths look keys up by id only (batched on PostgreSQL, see IdLookup); the owner check
    // is made on the row. The exchange and every access-token request read the owner's membership
    // in the same query.
    const membership = identity.membershipJoin('k.organization_id', 'k.user_id');
    this.withMembershipById = new IdLookup(
      dataSource,
      `SELECT k.id AS id, k.organization_id AS organization_id, k.user_id AS user_id, k.secret_hash AS secret_hash,
       k.status AS status, ${membership.columns} FROM api_keys k ${membership.joins}`,
      'k.id',
    );
    this.byId = new IdLookup(dataSource, `SELECT ${COLUMNS} FROM api_keys`, 'id');
    this.listActive = listStatement(dataSource, "AND status = 'ACTIVE'");
    this.listAll = listStatement(dataSource, '');
  }

  /** Creates an ACTIVE key; the returned value is the only time the secret exists outside the caller. */
  async create(owner: KeyOwner, label: string, request?: RequestContext): Promise<{ key: ApiKey; value: string }> {
    const id = randomUUID();
    const secret = ApiKeyCodec.newSecret();
    const now = new Date();
    const key = this.apiKeys.create({
      id,
      organizationId: owner.organizationId,
      userId: owner.userId,
      label,
      secretHash: this.hasher.hash(secret),
      status: 'ACTIVE',
      createdAt: now,
      updatedAt: now,
      lastUsedAt: null,
      revokedAt: null,
    });
    await this.apiKeys.insert(key);
    await this.audit.record({
      action: 'api_key.created',
      ...this.actor(owner),
      targetType: 'api_key',
      targetId: id,
      request,
    });
    return { key, value: this.codec.format(id, secret) };
  }

  /** The caller's keys, newest first (created_at, then id, descending), and how many there are. */
  async list(owner: KeyOwner, query: ListKeysQuery): Promise<Page<ApiKey>> {
    const statement = query.includeRevoked ? this.listAll : this.listActive;
    const { userId, organizationId } = owner;
    const rows = await statement.rows([
      userId,
      organizationId,
      userId,
      organizationId,
      query.limit,
      (query.page - 1) * query.limit,
    ]);
    return {
      // A page past the end is the count's row alone (no key columns).
      items: rows.filter((row) => row.id !== null).map((row) => this.withPendingUse(fromRow(row as ApiKeyRow))),
      page: query.page,
      limit: query.limit,
      totalCount: Number(rows[0]?.total_count ?? 0),
    };
  }

  /** The caller's own key; someone else's is "not found", never "forbidden". */
  async get(owner: KeyOwner, id: string): Promise<ApiKey> {
    const row = await this.byId.find(id);
    if (row === undefined || !ownedBy(row, owner)) throw notFound(Messages.apiKeyNotFound);
    return this.withPendingUse(fromRow(row));
  }

  /** Revokes at once and for good; revoking a revoked key returns it unchanged. */
  async revoke(owner: KeyOwner, id: string, request?: RequestContext): Promise<ApiKey> {
    const now = new Date();
    const result = await this.apiKeys
      .createQueryBuilder()
      .update(ApiKey)
      .set({ status: 'REVOKED', revokedAt: now, updatedAt: now })
      .where("id = :id AND user_id = :userId AND organization_id = :organizationId AND status = 'ACTIVE'", {
        id,
        ...owner,
      })
      .execute();
    if ((result.affected ?? 0) > 0) {
      await this.audit.record({
        action: 'api_key.revoked',
        ...this.actor(owner),
        targetType: 'api_key',
        targetId: id,
        request,
      });
    }
    return this.get(owner, id);
  }

  /**
   * POST /v1/token steps 4-5 (DESIGN.md section 2): unknown id or wrong secret -> invalid
   * credentials; right secret of a revoked key -> revoked. The secret is compared in constant time.
   * The owner's membership comes back from the same query, for step 6 (the caller's to judge).
   */
  async authenticate(parsed: ParsedApiKey): Promise<AuthenticatedKey> {
    const row = await this.withMembershipById.find(parsed.keyId);
    if (row === undefined || !this.hasher.matches(parsed.secret, row.secret_hash)) {
      throw new ExchangeRefused('invalid_credentials', Messages.invalidApiKeyCredentials);
    }
    const key = { id: row.id, organizationId: row.organization_id, userId: row.user_id };
    if (row.status !== 'ACTIVE') throw new ExchangeRefused('revoked', Messages.apiKeyRevoked, key);
    return { key, access: this.identity.memberAccess(row) };
  }

  /**
   * For a request with an access token minted from this key (every one of them, so that a
   * revocation or a role change applies at once): the owner's current role while the key is ACTIVE
   * and the owner still a member of its organization, else null. One query.
   */
  async roleThroughActiveKey(id: string, owner: KeyOwner): Promise<Role | null> {
    const row = await this.withMembershipById.find(id);
    if (row === undefined || !ownedBy(row, owner) || row.status !== 'ACTIVE') return null;
    return this.identity.memberAccess(row)?.role ?? null;
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

const COLUMNS =
  'id, organization_id, user_id, label, secret_hash, status, created_at, updated_at, last_used_at, revoked_at';

function ownedBy(row: { user_id: string; organization_id: string }, owner: KeyOwner): boolean {
  return row.user_id === owner.userId && row.organization_id === owner.organizationId;
}

interface ApiKeyRow {
  id: string;
  organization_id: string;
  user_id: string;
  label: string;
  secret_hash: string;
  status: ApiKeyStatus;
  created_at: Date | string;
  updated_at: Date | string;
  last_used_at: Date | string | null;
  revoked_at: Date | string | null;
}

function fromRow(row: ApiKeyRow): ApiKey {
  return Object.assign(new ApiKey(), {
    id: row.id,
    organizationId: row.organization_id,
    userId: row.user_id,
    label: row.label,
    secretHash: row.secret_hash,
    status: row.status,
    createdAt: toDate(row.created_at),
    updatedAt: toDate(row.updated_at),
    lastUsedAt: row.last_used_at === null ? null : toDate(row.last_used_at),
    revokedAt: row.revoked_at === null ? null : toDate(row.revoked_at),
  });
}

/** A row of a list page: a key and the owner's count, or only the count when the page is empty. */
type ListRow = (ApiKeyRow | { [column in keyof ApiKeyRow]: null }) & { total_count: number | string };

/**
 * One owner's keys, one page and the count of them all, in one statement (with an optional extra
 * condition): the count from an index alone (api_keys_owner_status for the active keys,
 * api_keys_owner_newest for all), the page from api_keys_owner_newest. One statement rather than
 * two: on PostgreSQL each round trip cost the event loop ~100 µs on the 2-core machine (sending a
 * query wakes a server process). The count is joined to the page, so a page past the end still
 * returns it.
 */
function listStatement(dataSource: DataSource, condition: string): Statement<ListRow> {
  const owner = (first: number) => `user_id = $${first} AND organization_id = $${first + 1} ${condition}`;
  const page = `SELECT ${COLUMNS} FROM api_keys WHERE ${owner(3)} ORDER BY created_at DESC, id DESC LIMIT $5 OFFSET $6`;
  return new Statement(
    dataSource,
    `SELECT c.total_count, p.* FROM (SELECT COUNT(*) AS total_count FROM api_keys WHERE ${owner(1)}) c
     LEFT JOIN (${page}) p ON 1 = 1
     ORDER BY p.created_at DESC, p.id DESC`,
  );
}
