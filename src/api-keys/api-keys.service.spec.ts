import type { AuditEntry } from '../audit/audit.service';
import { AppError } from '../common/errors';
import type { AppConfiguration } from '../config/configuration';
import type { Secrets } from '../config/local-secrets';
import { ALL_PERMISSIONS } from '../identity/roles';
import { ApiKey } from './api-key.entity';
import { ApiKeysService, KeyCreator, MIN_KEY_LIFETIME_MS } from './api-keys.service';

/**
 * Rotation's expiry rules (docs/api.md#post-v1user-api-keysidrotate, #expiry-and-key-policy) on an in-memory
 * repository: the many cases in milliseconds, without a database. The SQL (the cap, the owner's lock, the old
 * key's grace as min(its expiry, now + grace)) is tested end to end in test/api-keys/key-lifecycle.e2e-spec.ts.
 */
const NOW = Date.parse('2030-06-01T12:00:00.000Z');
const DAY = 86_400_000;
const OWNER = { userId: 'u1', organizationId: 'o1' };

class InMemoryKeys {
  readonly rows = new Map<string, ApiKey>();
  retired?: { id: string; replacedBy: string; graceEndsAt: Date | null };

  add(fields: Partial<ApiKey>): ApiKey {
    const key = Object.assign(new ApiKey(), {
      id: `k${this.rows.size + 1}`,
      ...OWNER,
      label: 'deploys',
      secretHash: 'h',
      status: 'ACTIVE',
      scopes: 0,
      expiresAt: null,
      createdAt: new Date(NOW - DAY),
      updatedAt: new Date(NOW - DAY),
      lastUsedAt: null,
      lastUsedIp: null,
      lastUsedUserAgent: null,
      revokedAt: null,
      replacedBy: null,
      allowedCidrs: null,
      rateLimitRequests: null,
      rateLimitWindowSeconds: null,
      ...fields,
    });
    this.rows.set(key.id, key);
    return key;
  }

  findById(id: string): Promise<ApiKey | undefined> {
    return Promise.resolve(this.rows.get(id));
  }
  async lockOwner(): Promise<void> {}
  retire(
    _owner: unknown,
    id: string,
    replacedBy: string,
    _at: Date,
    graceEndsAt: Date | null,
  ): Promise<Pick<ApiKey, 'expiresAt'>> {
    this.retired = { id, replacedBy, graceEndsAt };
    const key = this.rows.get(id)!;
    if (graceEndsAt !== null && (key.expiresAt === null || graceEndsAt < key.expiresAt)) key.expiresAt = graceEndsAt;
    return Promise.resolve({ expiresAt: key.expiresAt });
  }
  insertWithinActiveCap(key: ApiKey): Promise<boolean> {
    this.rows.set(key.id, key);
    return Promise.resolve(true);
  }
}

function service(keys: InMemoryKeys, policyDays: number | null = null, audited: AuditEntry[] = []): ApiKeysService {
  const config = { apiKeys: { environment: 'dev', maxActivePerUser: 100 } } as AppConfiguration;
  const secrets = { apiKeyPepper: 'p'.repeat(32) } as Secrets;
  const audit = {
    record: (entry: AuditEntry) => Promise.resolve(void audited.push(entry)),
    recordAll: (entries: AuditEntry[]) => Promise.resolve(void audited.push(...entries)),
  };
  return new ApiKeysService(
    keys as never,
    {
      withPendingUse: (key: ApiKey) => key,
      get: (store: InMemoryKeys, _owner: unknown, id: string) => store.findById(id),
    } as never,
    audit as never,
    { run: async (work: (tx: unknown) => Promise<unknown>) => work({}) } as never,
    { organizationById: () => Promise.resolve({ maxKeyLifetimeDays: policyDays }) } as never,
    config,
    secrets,
  );
}

const creator = (fields: Partial<KeyCreator> = {}): KeyCreator => ({
  ...OWNER,
  permissions: ALL_PERMISSIONS,
  ...fields,
});
const iso = (ms: number) => new Date(ms).toISOString();

describe('ApiKeysService.rotate: the new key’s expiry', () => {
  beforeEach(() => jest.useFakeTimers({ now: NOW, doNotFake: ['nextTick', 'setImmediate'] }));
  afterEach(() => jest.useRealTimers());

  async function rotate(
    old: Partial<ApiKey>,
    input: { gracePeriodSeconds?: number; expiresAt?: string | null } = {},
    options: { policyDays?: number | null; caller?: Partial<KeyCreator> } = {},
  ): Promise<{ expiresAt: number | null; keys: InMemoryKeys }> {
    const keys = new InMemoryKeys();
    const key = keys.add(old);
    const { key: rotated } = await service(keys, options.policyDays ?? null).rotate(creator(options.caller), key.id, {
      gracePeriodSeconds: input.gracePeriodSeconds ?? 0,
      expiresAt: input.expiresAt,
    });
    return { expiresAt: rotated.expiresAt?.getTime() ?? null, keys };
  }

  it.each([
    ['no expiry, no policy: none', {}, {}, null],
    [
      'a 30-day key: 30 days from now',
      { createdAt: new Date(NOW - 10 * DAY), expiresAt: new Date(NOW + 20 * DAY) },
      {},
      NOW + 30 * DAY,
    ],
    [
      'a key of 10 s: the shortest lifetime, 60 s',
      { createdAt: new Date(NOW - 5000), expiresAt: new Date(NOW + 5000) },
      {},
      NOW + MIN_KEY_LIFETIME_MS,
    ],
    ['an expires_at asked for: that one', {}, { expiresAt: iso(NOW + 3 * DAY) }, NOW + 3 * DAY],
    ['null asked for: none', { expiresAt: new Date(NOW + DAY) }, { expiresAt: null }, null],
  ] as const)('%s', async (_name, old, input, expected) => {
    expect((await rotate(old, input)).expiresAt).toBe(expected);
  });

  it.each([
    ['no expiry: the policy’s maximum', {}, NOW + 5 * DAY],
    [
      'a 30-day key: cut to the policy',
      { createdAt: new Date(NOW), expiresAt: new Date(NOW + 30 * DAY) },
      NOW + 5 * DAY,
    ],
    ['a 2-day key: its own lifetime', { createdAt: new Date(NOW), expiresAt: new Date(NOW + 2 * DAY) }, NOW + 2 * DAY],
  ] as const)('under a 5-day policy, %s', async (_name, old, expected) => {
    expect((await rotate(old, {}, { policyDays: 5 })).expiresAt).toBe(expected);
  });

  it.each([
    ['past the policy', { expiresAt: iso(NOW + 5 * DAY + 1) }, { policyDays: 5 }],
    ['under 60 s ahead', { expiresAt: iso(NOW + MIN_KEY_LIFETIME_MS - 1) }, {}],
    ['in the past', { expiresAt: iso(NOW - 1) }, {}],
    [
      'after the calling key expires',
      { expiresAt: iso(NOW + DAY + 1) },
      { caller: { credentialExpiresAtMs: NOW + DAY } },
    ],
  ] as const)('refuses an expires_at %s with 400, changing nothing', async (_name, input, options) => {
    const keys = new InMemoryKeys();
    const key = keys.add({});
    const refusal = await service(keys, 'policyDays' in options ? options.policyDays : null)
      .rotate(creator('caller' in options ? options.caller : {}), key.id, { gracePeriodSeconds: 0, ...input })
      .catch((error: unknown) => error);
    expect(refusal).toBeInstanceOf(AppError);
    expect((refusal as AppError).code).toBe('INVALID_ARGUMENT');
    expect([keys.rows.size, keys.retired]).toEqual([1, undefined]);
  });

  it.each([
    ['none: the caller’s', {}, null, NOW + DAY],
    [
      'a 30-day key: cut to the caller’s',
      { createdAt: new Date(NOW), expiresAt: new Date(NOW + 30 * DAY) },
      null,
      NOW + DAY,
    ],
    [
      'an hour-long key: its own',
      { createdAt: new Date(NOW), expiresAt: new Date(NOW + 3_600_000) },
      null,
      NOW + 3_600_000,
    ],
  ] as const)('with an access token whose key expires in a day, %s', async (_name, old, policyDays, expected) => {
    const rotated = await rotate(old, {}, { policyDays, caller: { credentialExpiresAtMs: NOW + DAY } });
    expect(rotated.expiresAt).toBe(expected);
  });

  it('with an access token whose key expires in 3 days under a 1-day policy: the policy’s', async () => {
    const rotated = await rotate({}, {}, { policyDays: 1, caller: { credentialExpiresAtMs: NOW + 3 * DAY } });
    expect(rotated.expiresAt).toBe(NOW + DAY);
  });

  it('retires the old key at once (grace 0) or with a grace end of now + grace, marked replaced by the new one', async () => {
    const atOnce = await rotate({});
    expect(atOnce.keys.retired).toEqual({ id: 'k1', replacedBy: expect.any(String), graceEndsAt: null });
    const graceful = await rotate({}, { gracePeriodSeconds: 3600 });
    expect(graceful.keys.retired?.graceEndsAt?.getTime()).toBe(NOW + 3_600_000);
    expect([...graceful.keys.rows.keys()]).toContain(graceful.keys.retired?.replacedBy);
  });

  it('audits a rotation with grace with the old key’s new expiry, and one without grace as a revocation too', async () => {
    const entries = async (old: Partial<ApiKey>, gracePeriodSeconds: number) => {
      const keys = new InMemoryKeys();
      const audited: AuditEntry[] = [];
      const key = keys.add(old);
      const { key: rotated } = await service(keys, null, audited).rotate(creator(), key.id, { gracePeriodSeconds });
      return audited.map((entry) => ({ ...entry, targetId: entry.targetId === rotated.id ? 'new' : entry.targetId }));
    };
    const rotated = { action: 'api_key.rotated', targetId: 'new', previousApiKeyId: 'k1' };
    expect(await entries({}, 3600)).toEqual([
      expect.objectContaining({ ...rotated, previousApiKeyExpiresAt: new Date(NOW + 3_600_000) }),
    ]);
    // A grace never lengthens the key's life: its own earlier expiry is the one recorded.
    expect(await entries({ expiresAt: new Date(NOW + 60_000) }, 3600)).toEqual([
      expect.objectContaining({ ...rotated, previousApiKeyExpiresAt: new Date(NOW + 60_000) }),
    ]);
    const atOnce = await entries({}, 0);
    expect(atOnce).toEqual([
      expect.objectContaining(rotated),
      expect.objectContaining({ action: 'api_key.revoked', reason: 'rotated', targetId: 'k1', previousApiKeyId: null }),
    ]);
    expect(atOnce.map((entry) => entry.previousApiKeyExpiresAt)).toEqual([undefined, undefined]);
  });

  it('refuses a revoked or expired key, and another owner’s, before anything is written', async () => {
    for (const [old, code] of [
      [{ status: 'REVOKED' as const }, 'FAILED_PRECONDITION'],
      [{ expiresAt: new Date(NOW) }, 'FAILED_PRECONDITION'],
      [{ userId: 'someone else' }, 'NOT_FOUND'],
    ] as const) {
      const keys = new InMemoryKeys();
      const key = keys.add(old);
      const refusal = await service(keys)
        .rotate(creator(), key.id, { gracePeriodSeconds: 0 })
        .catch((error: unknown) => error);
      expect((refusal as AppError).code).toBe(code);
      expect([keys.rows.size, keys.retired]).toEqual([1, undefined]);
    }
  });
});
