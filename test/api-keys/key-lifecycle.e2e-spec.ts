import { DataSource } from 'typeorm';
import { ApiKeyCodec } from '../../src/api-keys/api-key-codec';
import { IdentityService } from '../../src/identity/identity.service';
import { Organization } from '../../src/identity/organization.entity';
import { freezeDate, nextWholeSecond } from '../support/clock';
import { PERMISSION_CATALOGUE as CATALOGUE } from '../support/api-key-records';
import {
  apiKeyAuth,
  bearer,
  decodeJwt,
  expectApiKeyRejected,
  expectBearerRejected,
  expectError,
  expectInvalidArgument,
  ISO_MS,
} from '../support/http-assertions';
import { createTestApp, DATABASE_KIND, TestApp, TestUser } from '../support/test-app';
import { pause } from '../support/wait';

const DAY = 86_400_000;
/** The defaults of docs/api.md#scopes, as each role has them. */
const ADMIN_DEFAULT = ['api_keys:read', 'audit:read', 'integrations:read', 'integrations:write'];
const MEMBER_DEFAULT = ['api_keys:read', 'integrations:read'];

/**
 * The key lifecycle (docs/api.md#scopes, #post-v1token, #expiry-and-key-policy, #rotation): scopes
 * on keys and tokens, narrowing at exchange, expiry and the organization's key policy, rotation.
 */
describe(`key lifecycle on ${DATABASE_KIND}`, () => {
  let t: TestApp;
  let dataSource: DataSource;
  let orgs = 0;
  beforeAll(async () => {
    // Many refused exchanges from one address on purpose: not what the failure limit is tested with.
    t = await createTestApp({ env: { TOKEN_FAILURE_LIMIT_PER_MINUTE: '100000' } });
    dataSource = t.get(DataSource);
  });
  afterAll(() => t.close());
  afterEach(() => jest.useRealTimers());

  /** A user in an organization of its own (policies and lifetimes are per organization). */
  const user = (role: TestUser['role'] = 'admin'): Promise<TestUser> => t.user({ org: `lifecycle-${++orgs}`, role });
  const createWith = (token: string, body: unknown) =>
    t
      .http()
      .post('/v1/user-api-keys')
      .set(bearer(token))
      .send(body as object);
  const exchangeWith = (value: string, body?: unknown) => {
    const request = t.http().post('/v1/token').set(apiKeyAuth(value));
    return body === undefined ? request : request.send(body as object);
  };
  const getKey = (token: string, id: string) => t.http().get(`/v1/user-api-keys/${id}`).set(bearer(token));
  const rotate = (token: string, id: string, body: unknown = {}) =>
    t
      .http()
      .post(`/v1/user-api-keys/${id}/rotate`)
      .set(bearer(token))
      .send(body as object);
  const setPolicy = (owner: TestUser, days: number | null) =>
    dataSource.getRepository(Organization).update({ id: owner.organizationId }, { maxKeyLifetimeDays: days });
  const keyRows = (owner: TestUser): Promise<Array<{ id: string; status: string }>> =>
    dataSource.query(`SELECT id, status FROM api_keys WHERE user_id = '${owner.userId}' ORDER BY created_at`);
  const auditRows = (owner: TestUser): Promise<Array<Record<string, unknown>>> =>
    dataSource.query(
      `SELECT action, reason, target_id, previous_api_key_id, actor_user_id, actor_api_key_id FROM audit_events
       WHERE organization_id = '${owner.organizationId}' ORDER BY occurred_at, id`,
    );
  const iso = (ms: number): string => new Date(ms).toISOString();

  describe('scopes on keys', () => {
    it('gives a new key the defaults its creator has: an admin four, a member two; shown on every record', async () => {
      const admin = await user('admin');
      const member = await user('member');
      const a = await t.createKey(admin);
      const m = await t.createKey(member);
      expect(a.body.api_key.scopes).toEqual(ADMIN_DEFAULT);
      expect(m.body.api_key.scopes).toEqual(MEMBER_DEFAULT);
      expect((await getKey(admin.token, a.id).expect(200)).body.api_key.scopes).toEqual(ADMIN_DEFAULT);
      const listed = await t.http().get('/v1/user-api-keys').set(bearer(member.token)).expect(200);
      expect(listed.body.api_keys[0].scopes).toEqual(MEMBER_DEFAULT);
    });

    it('stores the scopes asked for and shows them in catalogue order; [] is allowed; an admin may ask for all', async () => {
      const admin = await user();
      const asked = await t.createKey(admin, 'asked', {
        scopes: ['organization:write', 'integrations:read', 'api_keys:create'],
      });
      expect(asked.body.api_key.scopes).toEqual(['api_keys:create', 'integrations:read', 'organization:write']);
      expect((await t.createKey(admin, 'none', { scopes: [] })).body.api_key.scopes).toEqual([]);
      expect((await t.createKey(admin, 'all', { scopes: [...CATALOGUE].reverse() })).body.api_key.scopes).toEqual(
        CATALOGUE,
      );
    });

    it.each([
      ['an unknown name', ['api_keys:read', 'keys:everything']],
      ['a duplicate', ['api_keys:read', 'api_keys:read']],
      ['a name in another case', ['API_KEYS:READ']],
      ['an empty name', ['']],
      ['a number in the array', [2]],
      ['a string instead of an array', 'api_keys:read'],
      ['null', null],
      ['an object', { 'api_keys:read': true }],
    ])('refuses %s with 400 and stores nothing', async (_name, scopes) => {
      const admin = await user();
      expectInvalidArgument(await createWith(admin.token, { scopes }));
      expect(await keyRows(admin)).toEqual([]);
    });

    it("refuses a scope the creator's role lacks with 403 and stores nothing", async () => {
      const member = await user('member');
      for (const scope of ['integrations:write', 'api_keys:manage', 'audit:read', 'organization:write']) {
        expectError(
          await createWith(member.token, { scopes: [scope] }),
          403,
          'PERMISSION_DENIED',
          'insufficient permissions',
          'scopes_exceed_permissions',
        );
      }
      expect(await keyRows(member)).toEqual([]);
      await createWith(member.token, { scopes: ['api_keys:create', 'api_keys:revoke'] }).expect(201);
    });

    it("with an access token: the defaults are those the token has, and a scope beyond the token's is 403", async () => {
      const admin = await user();
      const parent = await t.createKey(admin, 'parent', {
        scopes: ['api_keys:create', 'api_keys:read', 'integrations:read'],
      });
      const token = await t.exchange(parent.value);
      const child = await t.createKey({ token }, 'child');
      expect(child.body.api_key.scopes).toEqual(['api_keys:read', 'integrations:read']);
      // The role has integrations:write and api_keys:revoke; the key does not.
      for (const scope of ['integrations:write', 'api_keys:revoke']) {
        expectError(
          await createWith(token, { scopes: [scope] }),
          403,
          'PERMISSION_DENIED',
          'insufficient permissions',
          'scopes_exceed_permissions',
        );
      }
      expect((await t.createKey({ token }, 'creator', { scopes: ['api_keys:create'] })).body.api_key.scopes).toEqual([
        'api_keys:create',
      ]);
      // A token narrowed to api_keys:create has none of the defaults.
      const narrow = await t.exchange(parent.value, { scope: 'api_keys:create' });
      expect((await t.createKey({ token: narrow }, 'bare')).body.api_key.scopes).toEqual([]);
      expectError(
        await createWith(narrow, { scopes: ['api_keys:read'] }),
        403,
        'PERMISSION_DENIED',
        'insufficient permissions',
        'scopes_exceed_permissions',
      );
    });

    it("an access token may do what its owner's role AND its key's scopes AND its own scope allow, read at every request", async () => {
      const admin = await user();
      const { id, value } = await t.createKey(admin, 'reader', {
        scopes: ['api_keys:read', 'integrations:read', 'integrations:write'],
      });
      const token = await t.exchange(value);
      await t.http().get('/v1/user-api-keys').set(bearer(token)).expect(200);
      await t.http().get('/v1/notification-integrations').set(bearer(token)).expect(200);
      // integrations:write passes the guard (then the empty body is refused).
      expectInvalidArgument(await t.http().post('/v1/notification-integrations').set(bearer(token)).send({}));
      // Not in the key's scopes, although the admin role has them.
      expectError(
        await t.http().delete(`/v1/user-api-keys/${id}`).set(bearer(token)),
        403,
        'PERMISSION_DENIED',
        'insufficient permissions',
        'insufficient_permissions',
      );
      expectError(
        await createWith(token, {}),
        403,
        'PERMISSION_DENIED',
        'insufficient permissions',
        'insufficient_permissions',
      );
      // The token's own scope narrows further.
      const narrow = await t.exchange(value, { scope: 'integrations:read' });
      expectError(
        await t.http().get('/v1/user-api-keys').set(bearer(narrow)),
        403,
        'PERMISSION_DENIED',
        'insufficient permissions',
        'insufficient_permissions',
      );
      await t.http().get('/v1/notification-integrations').set(bearer(narrow)).expect(200);
      // A role downgrade applies at the next request: a viewer cannot write integrations whatever the key says.
      await t.get(IdentityService).setRole(admin.organizationId, admin.userId, 'viewer');
      expectError(
        await t.http().post('/v1/notification-integrations').set(bearer(token)).send({}),
        403,
        'PERMISSION_DENIED',
        'insufficient permissions',
        'insufficient_permissions',
      );
      await t.http().get('/v1/user-api-keys').set(bearer(token)).expect(200);
    });

    it('a key with no scopes authenticates its owner and may do nothing else', async () => {
      const admin = await user();
      const { value } = await t.createKey(admin, 'identity only', { scopes: [] });
      const response = await exchangeWith(value).expect(200);
      expect(response.body.scope).toBe('');
      expect(decodeJwt(response.body.access_token).payload.scope).toBe('');
      expectError(
        await t.http().get('/v1/user-api-keys').set(bearer(response.body.access_token)),
        403,
        'PERMISSION_DENIED',
        'insufficient permissions',
        'insufficient_permissions',
      );
    });
  });

  describe('POST /v1/token narrowing', () => {
    it("grants all the key's scopes when none is asked for: scope in the answer and the claim, typ at+jwt", async () => {
      const admin = await user();
      const { value } = await t.createKey(admin, 'k', {
        scopes: ['integrations:read', 'api_keys:create', 'audit:read'],
      });
      for (const body of [undefined, {}]) {
        const response = await exchangeWith(value, body).expect(200);
        expect(response.body.scope).toBe('api_keys:create audit:read integrations:read');
        const { header, payload } = decodeJwt(response.body.access_token);
        expect(header.typ).toBe('at+jwt');
        expect(payload.scope).toBe(response.body.scope);
        expect(payload.token_use).toBe('access');
      }
    });

    it('grants exactly the scope asked for, answered in catalogue order', async () => {
      const admin = await user();
      const { value } = await t.createKey(admin, 'k', { scopes: CATALOGUE });
      const response = await exchangeWith(value, { scope: 'organization:write api_keys:read' }).expect(200);
      expect(response.body.scope).toBe('api_keys:read organization:write');
      expect(decodeJwt(response.body.access_token).payload.scope).toBe('api_keys:read organization:write');
    });

    it.each([
      ['an empty scope', { scope: '' }],
      ['two spaces between names', { scope: 'api_keys:read  integrations:read' }],
      ['a leading space', { scope: ' api_keys:read' }],
      ['a duplicate name', { scope: 'api_keys:read api_keys:read' }],
      ['a scope that is not a string', { scope: ['api_keys:read'] }],
      ['expires_in 59', { expires_in: 59 }],
      ['expires_in 86401', { expires_in: 86401 }],
      ['expires_in 0', { expires_in: 0 }],
      ['a fractional expires_in', { expires_in: 60.5 }],
      ['expires_in as a string', { expires_in: '60' }],
      ['expires_in null', { expires_in: null }],
      ['scope null', { scope: null }],
      ['another property', { grant_type: 'client_credentials' }],
      ['another property beside valid ones', { scope: 'api_keys:read', expires_in: 60, extra: 1 }],
    ])('refuses %s with 400 INVALID_ARGUMENT, records no use', async (_name, body) => {
      const admin = await user();
      const { id, value } = await t.createKey(admin);
      expectInvalidArgument(await exchangeWith(value, body));
      expect((await getKey(admin.token, id).expect(200)).body.api_key.last_used_at).toBeNull();
    });

    it.each([
      ['an unknown name', { scope: 'api_keys:read everything' }, 'scope_not_a_permission'],
      ['a name outside the key scopes', { scope: 'api_keys:create' }, 'scope_not_granted'],
    ])('refuses %s with 400 INVALID_ARGUMENT (%s), records no use', async (_name, body, reason) => {
      const admin = await user();
      const { id, value } = await t.createKey(admin);
      expectInvalidArgument(await exchangeWith(value, body), reason);
      expect((await getKey(admin.token, id).expect(200)).body.api_key.last_used_at).toBeNull();
    });

    it('expires_in: 60 and 86400 are accepted; the token lives min(asked, organization lifetime)', async () => {
      const admin = await user();
      const { value } = await t.createKey(admin);
      const identity = t.get(IdentityService);
      const lifetime = async (body: object) => {
        const response = await exchangeWith(value, body).expect(200);
        const { payload } = decodeJwt(response.body.access_token);
        expect((payload.exp as number) - (payload.iat as number)).toBe(response.body.expires_in);
        return response.body.expires_in as number;
      };
      expect(await lifetime({ expires_in: 60 })).toBe(60);
      expect(await lifetime({ expires_in: 86400 })).toBe(1800);
      await identity.setAccessTokenLifetime(admin.organizationId, 86400);
      expect(await lifetime({ expires_in: 86400 })).toBe(86400);
      expect(await lifetime({ expires_in: 3600, scope: 'api_keys:read' })).toBe(3600);
      expect(await lifetime({})).toBe(86400);
    });

    it('authenticates before reading the body: a failed authentication is the 401 whatever the body holds', async () => {
      const admin = await user();
      const active = await t.createKey(admin);
      const revoked = await t.createKey(admin);
      await t.http().delete(`/v1/user-api-keys/${revoked.id}`).set(bearer(admin.token)).expect(200);
      const bad = { scope: 'nonsense', expires_in: 1, extra: true };
      expectApiKeyRejected(
        await t.http().post('/v1/token').send(bad),
        'authorization header required',
        'authorization_header_missing',
      );
      expectApiKeyRejected(
        await t.http().post('/v1/token').set('Authorization', `Bearer ${admin.token}`).send(bad),
        'authorization header must use ApiKey scheme',
        'authorization_scheme_not_api_key',
      );
      expectApiKeyRejected(await exchangeWith('dev.garbage', bad), 'api key invalid', 'api_key_malformed');
      const wrongSecret = new ApiKeyCodec('dev').format(active.id, ApiKeyCodec.newSecret());
      expectApiKeyRejected(
        await exchangeWith(wrongSecret, bad),
        'invalid api key credentials',
        'api_key_invalid_credentials',
      );
      expectApiKeyRejected(await exchangeWith(revoked.value, bad), 'api key revoked', 'api_key_revoked');
      // A scope outside the key's is only known once the key is: still after authentication.
      expectApiKeyRejected(
        await exchangeWith(wrongSecret, { scope: 'api_keys:create' }),
        'invalid api key credentials',
        'api_key_invalid_credentials',
      );
    });
  });

  describe('expiry', () => {
    it.each([
      ['Z', (ms: number) => iso(ms).replace('.000Z', 'Z')],
      ['milliseconds and Z', (ms: number) => iso(ms)],
      ['an offset', (ms: number) => iso(ms + 2 * 3_600_000).replace('.000Z', '+02:00')],
      ['a negative offset', (ms: number) => iso(ms - 5.5 * 3_600_000).replace('.000Z', '-05:30')],
      ['lower-case t and z', (ms: number) => iso(ms).replace('T', 't').replace('Z', 'z')],
      ['microseconds', (ms: number) => iso(ms).replace('Z', '999Z')],
    ])('takes an expires_at with %s and shows it in UTC with milliseconds', async (_name, format) => {
      const admin = await user();
      const at = Math.floor(Date.now() / 1000) * 1000 + DAY;
      const created = await createWith(admin.token, { expires_at: format(at) }).expect(201);
      expect(created.body.api_key.expires_at).toBe(iso(at));
      expect(created.body.api_key.expires_at).toMatch(ISO_MS);
      expect(created.body.api_key.status).toBe('ACTIVE');
    });

    it('null or absent: no expiry', async () => {
      const admin = await user();
      expect((await createWith(admin.token, { expires_at: null }).expect(201)).body.api_key.expires_at).toBeNull();
      expect((await createWith(admin.token, {}).expect(201)).body.api_key.expires_at).toBeNull();
    });

    it.each([
      ['a date without a time', '2031-01-01'],
      ['no zone designator', '2031-01-01T00:00:00'],
      ['no seconds', '2031-01-01T00:00Z'],
      ['a one-digit offset hour', '2031-01-01T00:00:00+2:00'],
      ['31 February', '2031-02-31T00:00:00Z'],
      ['29 February of a common year', '2031-02-29T00:00:00Z'],
      ['month 13', '2031-13-01T00:00:00Z'],
      ['hour 24', '2031-01-01T24:00:00Z'],
      ['a leap second', '2031-06-30T23:59:60Z'],
      ['a space for T', '2031-01-01 00:00:00Z'],
      ['words', 'next year'],
      ['an empty string', ''],
      ['a number', 1924992000000],
      ['a boolean', true],
      ['an object', { at: '2031-01-01T00:00:00Z' }],
    ])('refuses %s with 400 and stores nothing', async (_name, expiresAt) => {
      const admin = await user();
      expectInvalidArgument(await createWith(admin.token, { expires_at: expiresAt }));
      expect(await keyRows(admin)).toEqual([]);
    });

    it('refuses the past with 400 expires_at_invalid and stores nothing', async () => {
      const admin = await user();
      expectInvalidArgument(
        await createWith(admin.token, { expires_at: '2020-01-01T00:00:00Z' }),
        'expires_at_invalid',
      );
      expect(await keyRows(admin)).toEqual([]);
    });

    it('takes an expires_at exactly 60 s ahead, and refuses 59 s and 59.999 s ahead', async () => {
      const admin = await user();
      const now = nextWholeSecond();
      freezeDate(now);
      expectInvalidArgument(await createWith(admin.token, { expires_at: iso(now + 59_000) }), 'expires_at_invalid');
      expectInvalidArgument(await createWith(admin.token, { expires_at: iso(now + 59_999) }), 'expires_at_invalid');
      expectInvalidArgument(await createWith(admin.token, { expires_at: iso(now) }), 'expires_at_invalid');
      const created = await createWith(admin.token, { expires_at: iso(now + 60_000) }).expect(201);
      expect(created.body.api_key.expires_at).toBe(iso(now + 60_000));
      // The same instant written with an offset.
      const offset = iso(now + 60_000 + 3_600_000).replace('.000Z', '+01:00');
      await createWith(admin.token, { expires_at: offset }).expect(201);
      expect(await keyRows(admin)).toHaveLength(2);
    });

    it('shows EXPIRED from expires_at on (REVOKED wins), and lists expired keys by default', async () => {
      const admin = await user();
      const now = nextWholeSecond();
      freezeDate(now);
      const expiring = await t.createKey(admin, 'expiring', { expires_at: iso(now + 120_000) });
      const revokedLater = await t.createKey(admin, 'revoked', { expires_at: iso(now + 120_000) });
      await t.http().delete(`/v1/user-api-keys/${revokedLater.id}`).set(bearer(admin.token)).expect(200);
      const status = async (id: string) => (await getKey(admin.token, id).expect(200)).body.api_key.status as string;

      jest.setSystemTime(now + 119_999);
      expect(await status(expiring.id)).toBe('ACTIVE');
      jest.setSystemTime(now + 120_000);
      expect(await status(expiring.id)).toBe('EXPIRED');
      expect(await status(revokedLater.id)).toBe('REVOKED');
      const listed = await t.http().get('/v1/user-api-keys').set(bearer(admin.token)).expect(200);
      expect(listed.body.api_keys.map((key: { id: string; status: string }) => [key.id, key.status])).toEqual([
        [expiring.id, 'EXPIRED'],
      ]);
      const all = await t.http().get('/v1/user-api-keys?include_revoked=true').set(bearer(admin.token)).expect(200);
      expect(all.body.total_count).toBe(2);
      // An expired key can still be revoked, and then shows REVOKED.
      const revoked = await t.http().delete(`/v1/user-api-keys/${expiring.id}`).set(bearer(admin.token)).expect(200);
      expect(revoked.body.api_key.status).toBe('REVOKED');
    });

    it('refuses the exchange of an expired key with its secret: 401 "api key expired", audited with reason expired', async () => {
      const admin = await user();
      const now = nextWholeSecond();
      freezeDate(now);
      const key = await t.createKey(admin, 'short', { expires_at: iso(now + 60_000) });
      const revoked = await t.createKey(admin, 'both', { expires_at: iso(now + 60_000) });
      await t.http().delete(`/v1/user-api-keys/${revoked.id}`).set(bearer(admin.token)).expect(200);
      await exchangeWith(key.value).expect(200);
      jest.setSystemTime(now + 60_000);
      expectApiKeyRejected(await exchangeWith(key.value), 'api key expired', 'api_key_expired');
      // A wrong secret is step 4, a revoked key step 5: expiry is not revealed to someone without the secret.
      const wrongSecret = new ApiKeyCodec('dev').format(key.id, ApiKeyCodec.newSecret());
      expectApiKeyRejected(
        await exchangeWith(wrongSecret),
        'invalid api key credentials',
        'api_key_invalid_credentials',
      );
      expectApiKeyRejected(await exchangeWith(revoked.value), 'api key revoked', 'api_key_revoked');
      // (A wrong secret names no organization: found by target. All at one frozen instant: compared as a set.)
      const failures: Array<Record<string, unknown>> = await dataSource.query(
        `SELECT target_id, reason FROM audit_events WHERE action = 'token.exchange_failed'
         AND target_id IN ('${key.id}', '${revoked.id}')`,
      );
      expect(failures.map((row) => `${row.target_id as string} ${row.reason as string}`).sort()).toEqual(
        [`${key.id} expired`, `${key.id} invalid_credentials`, `${revoked.id} revoked`].sort(),
      );
    });

    it("makes tokens live min(asked, organization lifetime, whole seconds left before the key's expires_at)", async () => {
      const admin = await user();
      const now = nextWholeSecond();
      freezeDate(now);
      const key = await t.createKey(admin, 'ten minutes', { expires_at: iso(now + 600_000) });
      const lives = async (body?: object) => {
        const response = await exchangeWith(key.value, body).expect(200);
        const { payload } = decodeJwt(response.body.access_token);
        expect(payload.iat).toBe(Math.floor(Date.now() / 1000));
        expect(payload.exp).toBe((payload.iat as number) + response.body.expires_in);
        expect((payload.exp as number) * 1000).toBeLessThanOrEqual(now + 600_000);
        return response.body.expires_in as number;
      };
      expect(await lives()).toBe(600);
      expect(await lives({ expires_in: 86400 })).toBe(600);
      expect(await lives({ expires_in: 60 })).toBe(60);
      await t.get(IdentityService).setAccessTokenLifetime(admin.organizationId, 300);
      expect(await lives()).toBe(300);
      jest.setSystemTime(now + 599_000);
      expect(await lives()).toBe(1);
      // A millisecond left: the token's exp is the key's expires_at, to the second.
      jest.setSystemTime(now + 599_999);
      expect(await lives()).toBe(1);
      jest.setSystemTime(now + 600_000);
      expectApiKeyRejected(await exchangeWith(key.value), 'api key expired', 'api_key_expired');
    });

    it('refuses a key in its last second (no whole second of token left) as expired', async () => {
      const admin = await user();
      const now = nextWholeSecond();
      freezeDate(now);
      const key = await t.createKey(admin, 'odd', { expires_at: iso(now + 60_500) });
      jest.setSystemTime(now + 59_900);
      const response = await exchangeWith(key.value).expect(200);
      expect(response.body.expires_in).toBe(1);
      jest.setSystemTime(now + 60_000);
      expectApiKeyRejected(await exchangeWith(key.value), 'api key expired', 'api_key_expired');
    });

    it("refuses an access token once its key's expires_at has passed, with the token's exp still ahead", async () => {
      const admin = await user();
      const now = nextWholeSecond();
      freezeDate(now);
      const key = await t.createKey(admin);
      const token = await t.exchange(key.value);
      expect(decodeJwt(token).payload.exp).toBe(now / 1000 + 1800);
      // The key's expiry moved before the token's (as a rotation with a grace period does), in the database.
      await dataSource.query(
        `UPDATE api_keys SET expires_at = ${DATABASE_KIND === 'sqlite' ? '?' : '$1'} WHERE id = '${key.id}'`,
        [iso(now + 30_000)],
      );
      jest.setSystemTime(now + 29_999);
      await getKey(token, key.id).expect(200);
      jest.setSystemTime(now + 30_000);
      expectBearerRejected(await getKey(token, key.id), 'credential_expired');
      jest.setSystemTime(now + 600_000);
      expectBearerRejected(await getKey(token, key.id), 'credential_expired');
    });

    it('refuses a token whose key expires between the exchange and its use', async () => {
      const admin = await user();
      const now = nextWholeSecond();
      freezeDate(now);
      const key = await t.createKey(admin, 'brief', { expires_at: iso(now + 120_000) });
      const token = await t.exchange(key.value);
      expect(decodeJwt(token).payload.exp).toBe(now / 1000 + 120);
      jest.setSystemTime(now + 119_999);
      await getKey(token, key.id).expect(200);
      jest.setSystemTime(now + 120_000);
      expectBearerRejected(await getKey(token, key.id), 'access_token_expired');
    });
  });

  describe('keys made with an access token never outlive the calling key', () => {
    const MAKER_SCOPES = ['api_keys:create', 'api_keys:revoke', ...ADMIN_DEFAULT];

    it('a creation without expires_at (or null) gets the calling key’s; a later one asked for is 400', async () => {
      const admin = await user();
      const callerExpiry = Math.floor(Date.now() / 1000) * 1000 + DAY;
      const maker = await t.createKey(admin, 'short-lived', { scopes: MAKER_SCOPES, expires_at: iso(callerExpiry) });
      const token = await t.exchange(maker.value);
      for (const body of [{}, { expires_at: null }]) {
        expect((await createWith(token, body).expect(201)).body.api_key.expires_at).toBe(iso(callerExpiry));
      }
      expect((await createWith(token, { expires_at: iso(callerExpiry) }).expect(201)).body.api_key.expires_at).toBe(
        iso(callerExpiry),
      );
      const earlier = callerExpiry - 3_600_000;
      expect((await createWith(token, { expires_at: iso(earlier) }).expect(201)).body.api_key.expires_at).toBe(
        iso(earlier),
      );
      expectInvalidArgument(await createWith(token, { expires_at: iso(callerExpiry + 1) }), 'expires_at_invalid');
      expectInvalidArgument(
        await createWith(token, { expires_at: iso(callerExpiry + 365 * DAY) }),
        'expires_at_invalid',
      );
      // 1 maker + 4 made; the refused ones stored nothing.
      expect(await keyRows(admin)).toHaveLength(5);
    });

    it('a rotation with an access token cuts the new key to the calling key’s expiry', async () => {
      const admin = await user();
      const callerExpiry = Math.floor(Date.now() / 1000) * 1000 + DAY;
      const maker = await t.createKey(admin, 'short-lived', { scopes: MAKER_SCOPES, expires_at: iso(callerExpiry) });
      const token = await t.exchange(maker.value);
      const forever = await t.createKey(admin, 'forever');
      const monthly = await t.createKey(admin, 'monthly', { expires_at: iso(Date.now() + 30 * DAY) });
      expect((await rotate(token, forever.id).expect(201)).body.api_key.expires_at).toBe(iso(callerExpiry));
      expect((await rotate(token, monthly.id).expect(201)).body.api_key.expires_at).toBe(iso(callerExpiry));
      const third = await t.createKey(admin, 'third');
      expectInvalidArgument(
        await rotate(token, third.id, { expires_at: iso(callerExpiry + 1000) }),
        'expires_at_invalid',
      );
      expect((await getKey(admin.token, third.id).expect(200)).body.api_key.status).toBe('ACTIVE');
      // Rotating itself: the new key expires with the old one, not a lifetime later.
      expect((await rotate(token, maker.id).expect(201)).body.api_key.expires_at).toBe(iso(callerExpiry));
    });

    it('the earlier of the calling key’s expiry and the organization’s policy wins', async () => {
      const admin = await user();
      const callerExpiry = Math.floor(Date.now() / 1000) * 1000 + 10 * DAY;
      const maker = await t.createKey(admin, 'ten days', { scopes: MAKER_SCOPES, expires_at: iso(callerExpiry) });
      const token = await t.exchange(maker.value);
      await setPolicy(admin, 2);
      const made = (await createWith(token, {}).expect(201)).body.api_key.expires_at;
      expect(Date.parse(made)).toBeLessThan(callerExpiry);
      expect(Date.parse(made)).toBeGreaterThan(Date.now() + 2 * DAY - 60_000);
      await setPolicy(admin, 30);
      expect((await createWith(token, {}).expect(201)).body.api_key.expires_at).toBe(iso(callerExpiry));
    });

    it('a key without expiry, or a session token, leaves the expiry as before', async () => {
      const admin = await user();
      const maker = await t.createKey(admin, 'forever maker', { scopes: MAKER_SCOPES });
      const token = await t.exchange(maker.value);
      expect((await createWith(token, {}).expect(201)).body.api_key.expires_at).toBeNull();
      expect((await createWith(admin.token, {}).expect(201)).body.api_key.expires_at).toBeNull();
    });
  });

  describe('organization key policy (max_key_lifetime_days)', () => {
    it('3650 days: none asked for or null becomes creation + 3650 days; exactly that is taken, a millisecond later is 400', async () => {
      const admin = await user();
      await setPolicy(admin, 3650);
      const now = nextWholeSecond();
      freezeDate(now);
      const max = now + 3650 * DAY;
      for (const body of [{}, { expires_at: null }]) {
        const created = await createWith(admin.token, body).expect(201);
        expect(created.body.api_key.created_at).toBe(iso(now));
        expect(created.body.api_key.expires_at).toBe(iso(max));
      }
      expect((await createWith(admin.token, { expires_at: iso(max) }).expect(201)).body.api_key.expires_at).toBe(
        iso(max),
      );
      expect((await createWith(admin.token, { expires_at: iso(now + DAY) }).expect(201)).body.api_key.expires_at).toBe(
        iso(now + DAY),
      );
      expectInvalidArgument(await createWith(admin.token, { expires_at: iso(max + 1) }), 'expires_at_invalid');
      expect(await keyRows(admin)).toHaveLength(4);
    });

    it('1 day; applies to keys created after it is set, not to those before', async () => {
      const admin = await user();
      const before = await t.createKey(admin);
      await setPolicy(admin, 1);
      const after = await t.createKey(admin);
      expect(Date.parse(after.body.api_key.expires_at!) - Date.parse(after.body.api_key.created_at)).toBe(DAY);
      expectInvalidArgument(
        await createWith(admin.token, { expires_at: iso(Date.now() + 2 * DAY) }),
        'expires_at_invalid',
      );
      expect((await getKey(admin.token, before.id).expect(200)).body.api_key.expires_at).toBeNull();
      await exchangeWith(before.value).expect(200);
    });
  });

  describe('rotation', () => {
    it('answers 201 with the new key (same label and scopes, a new secret) and the old one, revoked at once', async () => {
      const admin = await user();
      const old = await t.createKey(admin, 'deploys', { scopes: ['api_keys:read', 'integrations:read'] });
      const oldToken = await t.exchange(old.value);
      const response = await rotate(admin.token, old.id).expect(201);
      expect(response.headers['cache-control']).toBe('no-store');
      const { api_key: created, opaque_key: value, previous_api_key: previous } = response.body;
      expect(Object.keys(response.body).sort()).toEqual(['api_key', 'opaque_key', 'previous_api_key']);
      expect(created).toMatchObject({
        label: 'deploys',
        scopes: ['api_keys:read', 'integrations:read'],
        status: 'ACTIVE',
        expires_at: null,
        user_id: admin.userId,
        organization_id: admin.organizationId,
        value,
      });
      expect(created.id).not.toBe(old.id);
      expect(value).not.toBe(old.value);
      expect(previous).toMatchObject({ id: old.id, status: 'REVOKED', label: 'deploys' });
      expect(previous).not.toHaveProperty('value');
      // The old key and its tokens stop at once; the new key works.
      expectApiKeyRejected(await exchangeWith(old.value), 'api key revoked', 'api_key_revoked');
      expectBearerRejected(await getKey(oldToken, old.id), 'credential_revoked');
      const newToken = await t.exchange(value);
      await getKey(newToken, created.id).expect(200);
      expect((await getKey(admin.token, old.id).expect(200)).body.api_key.status).toBe('REVOKED');
    });

    it('records api_key.rotated (target the new key, previous_api_key_id the old) and, without grace, the revocation', async () => {
      const admin = await user();
      const old = await t.createKey(admin);
      const parent = await t.createKey(admin, 'rotator', {
        scopes: ['api_keys:create', 'api_keys:revoke', ...ADMIN_DEFAULT],
      });
      const token = await t.exchange(parent.value);
      const { body } = await rotate(token, old.id).expect(201);
      const rotated = (await auditRows(admin)).filter((row) => row.action !== 'api_key.created');
      const actor = { actor_user_id: admin.userId, actor_api_key_id: parent.id };
      expect(rotated).toEqual(
        expect.arrayContaining([
          {
            action: 'api_key.rotated',
            reason: null,
            target_id: body.api_key.id,
            previous_api_key_id: old.id,
            ...actor,
          },
          { action: 'api_key.revoked', reason: 'rotated', target_id: old.id, previous_api_key_id: null, ...actor },
        ]),
      );
      expect(rotated).toHaveLength(2);
      // With a grace period the old key is not revoked: the rotation alone.
      const graced = await t.createKey(admin, 'graced');
      await rotate(token, graced.id, { grace_period_seconds: 60 }).expect(201);
      const after = (await auditRows(admin)).filter((row) => row.action !== 'api_key.created');
      expect(after).toHaveLength(3);
      expect(after.filter((row) => row.target_id === graced.id)).toEqual([]);
    });

    it('with a grace period: the old key keeps working until now + grace, then is EXPIRED with its tokens refused', async () => {
      const admin = await user();
      const now = nextWholeSecond();
      freezeDate(now);
      const old = await t.createKey(admin);
      const oldToken = await t.exchange(old.value);
      const { body } = await rotate(admin.token, old.id, { grace_period_seconds: 600 }).expect(201);
      expect(body.previous_api_key).toMatchObject({ status: 'ACTIVE', expires_at: iso(now + 600_000) });
      expect(body.api_key.expires_at).toBeNull();
      jest.setSystemTime(now + 599_999);
      await exchangeWith(old.value).expect(200);
      // The token minted before the rotation (exp now + 1800 s) works until the grace ends, not beyond.
      await getKey(oldToken, old.id).expect(200);
      jest.setSystemTime(now + 600_000);
      expectApiKeyRejected(await exchangeWith(old.value), 'api key expired', 'api_key_expired');
      expectBearerRejected(await getKey(oldToken, old.id), 'credential_expired');
      expect((await getKey(admin.token, old.id).expect(200)).body.api_key.status).toBe('EXPIRED');
    });

    it('marks the old key replaced_by the new one, with or without grace; the new key and others are not', async () => {
      const admin = await user();
      const atOnce = await t.createKey(admin, 'at once');
      const graceful = await t.createKey(admin, 'graceful');
      const untouched = await t.createKey(admin, 'untouched');
      const first = (await rotate(admin.token, atOnce.id).expect(201)).body;
      expect(first.previous_api_key).toMatchObject({ status: 'REVOKED', replaced_by: first.api_key.id });
      expect(first.api_key.replaced_by).toBeNull();
      const second = (await rotate(admin.token, graceful.id, { grace_period_seconds: 600 }).expect(201)).body;
      expect(second.previous_api_key).toMatchObject({ status: 'ACTIVE', replaced_by: second.api_key.id });
      // As every read shows it.
      const listed = (await t.http().get('/v1/user-api-keys?include_revoked=true').set(bearer(admin.token)).expect(200))
        .body.api_keys as Array<{ id: string; replaced_by: string | null }>;
      expect(Object.fromEntries(listed.map((key) => [key.id, key.replaced_by]))).toEqual({
        [atOnce.id]: first.api_key.id,
        [graceful.id]: second.api_key.id,
        [untouched.id]: null,
        [first.api_key.id]: null,
        [second.api_key.id]: null,
      });
      // Rotating the one in its grace period again moves the mark to the newest key.
      const third = (await rotate(admin.token, graceful.id).expect(201)).body;
      expect((await getKey(admin.token, graceful.id).expect(200)).body.api_key.replaced_by).toBe(third.api_key.id);
    });

    it("never lengthens the old key's life: its expires_at becomes min(its own, now + grace)", async () => {
      const admin = await user();
      const now = nextWholeSecond();
      freezeDate(now);
      const old = await t.createKey(admin, 'soon', { expires_at: iso(now + 600_000) });
      const { body } = await rotate(admin.token, old.id, { grace_period_seconds: 604800 }).expect(201);
      expect(body.previous_api_key.expires_at).toBe(iso(now + 600_000));
    });

    it.each([
      ['grace 604801', { grace_period_seconds: 604801 }, 'invalid_argument'],
      ['a negative grace', { grace_period_seconds: -1 }, 'invalid_argument'],
      ['a fractional grace', { grace_period_seconds: 1.5 }, 'invalid_argument'],
      ['a grace as a string', { grace_period_seconds: '60' }, 'invalid_argument'],
      ['a null grace', { grace_period_seconds: null }, 'invalid_argument'],
      ['an expires_at without a zone', { expires_at: '2031-01-01T00:00:00' }, 'invalid_argument'],
      ['an expires_at in the past', { expires_at: '2020-01-01T00:00:00Z' }, 'expires_at_invalid'],
      ['another property', { label: 'renamed' }, 'invalid_argument'],
    ])('refuses %s with 400 (%s) and changes nothing', async (_name, body, reason) => {
      const admin = await user();
      const old = await t.createKey(admin);
      expectInvalidArgument(await rotate(admin.token, old.id, body), reason);
      expect(await keyRows(admin)).toEqual([{ id: old.id, status: 'ACTIVE' }]);
      expect((await getKey(admin.token, old.id).expect(200)).body.api_key.expires_at).toBeNull();
    });

    it('takes grace 604800 (7 days)', async () => {
      const admin = await user();
      const now = nextWholeSecond();
      freezeDate(now);
      const old = await t.createKey(admin);
      const { body } = await rotate(admin.token, old.id, { grace_period_seconds: 604800 }).expect(201);
      expect(body.previous_api_key.expires_at).toBe(iso(now + 604_800_000));
    });

    it("gives the new key the old key's lifetime counted from now, the body's expires_at, or none", async () => {
      const admin = await user();
      const now = nextWholeSecond();
      freezeDate(now);
      const daily = await t.createKey(admin, 'daily', { expires_at: iso(now + DAY) });
      jest.setSystemTime(now + 1_800_000);
      const inherited = await rotate(admin.token, daily.id).expect(201);
      expect(inherited.body.api_key.expires_at).toBe(iso(now + 1_800_000 + DAY));

      const forever = await t.createKey(admin);
      expect((await rotate(admin.token, forever.id).expect(201)).body.api_key.expires_at).toBeNull();

      const chosen = await t.createKey(admin, 'chosen', { expires_at: iso(now + DAY) });
      const asked = await rotate(admin.token, chosen.id, { expires_at: iso(now + 30 * DAY) }).expect(201);
      expect(asked.body.api_key.expires_at).toBe(iso(now + 30 * DAY));
      const cleared = await t.createKey(admin, 'cleared', { expires_at: iso(now + 2 * DAY) });
      expect(
        (await rotate(admin.token, cleared.id, { expires_at: null }).expect(201)).body.api_key.expires_at,
      ).toBeNull();
    });

    it("keeps the new key within the organization's policy", async () => {
      const admin = await user();
      const now = nextWholeSecond();
      freezeDate(now);
      const long = await t.createKey(admin, 'long', { expires_at: iso(now + 30 * DAY) });
      const forever = await t.createKey(admin, 'forever');
      await setPolicy(admin, 5);
      // Inherited lifetimes are cut to the policy; none becomes the policy's maximum.
      expect((await rotate(admin.token, long.id).expect(201)).body.api_key.expires_at).toBe(iso(now + 5 * DAY));
      expect((await rotate(admin.token, forever.id).expect(201)).body.api_key.expires_at).toBe(iso(now + 5 * DAY));
      // An expires_at asked for past the policy is refused, as at creation.
      const third = await t.createKey(admin);
      expectInvalidArgument(
        await rotate(admin.token, third.id, { expires_at: iso(now + 6 * DAY) }),
        'expires_at_invalid',
      );
      expectInvalidArgument(
        await rotate(admin.token, third.id, { expires_at: iso(now + 59_000) }),
        'expires_at_invalid',
      );
      expect((await getKey(admin.token, third.id).expect(200)).body.api_key.status).toBe('ACTIVE');
    });

    it("answers 404 for another user's key or an unknown one, 400 for an id that is not a UUID", async () => {
      const admin = await user();
      const colleague = await t.user({ org: `lifecycle-${orgs}`, role: 'admin' });
      const theirs = await t.createKey(colleague);
      expectError(await rotate(admin.token, theirs.id), 404, 'NOT_FOUND', 'api key not found', 'api_key_not_found');
      expectError(
        await rotate(admin.token, '00000000-0000-4000-8000-000000000001'),
        404,
        'NOT_FOUND',
        'api key not found',
        'api_key_not_found',
      );
      expectInvalidArgument(await rotate(admin.token, 'not-a-uuid'));
      expect((await getKey(colleague.token, theirs.id).expect(200)).body.api_key.status).toBe('ACTIVE');
    });

    it('refuses a revoked or an expired key with 400 FAILED_PRECONDITION "api key is not active", creating nothing', async () => {
      const admin = await user();
      const now = nextWholeSecond();
      freezeDate(now);
      const revoked = await t.createKey(admin);
      await t.http().delete(`/v1/user-api-keys/${revoked.id}`).set(bearer(admin.token)).expect(200);
      const expiring = await t.createKey(admin, 'expiring', { expires_at: iso(now + 60_000) });
      const graced = await t.createKey(admin);
      await rotate(admin.token, graced.id, { grace_period_seconds: 60 }).expect(201);
      jest.setSystemTime(now + 60_000);
      const before = await keyRows(admin);
      for (const id of [revoked.id, expiring.id, graced.id]) {
        expectError(
          await rotate(admin.token, id),
          400,
          'FAILED_PRECONDITION',
          'api key is not active',
          'api_key_not_active',
        );
      }
      expect(await keyRows(admin)).toEqual(before);
      expect((await auditRows(admin)).filter((row) => row.action === 'api_key.rotated')).toHaveLength(1);
    });

    it('needs api_keys:create, api_keys:revoke, and every scope of the key rotated (403 otherwise, as a creation with them would be)', async () => {
      const viewer = await user('viewer');
      const own = await t.createKey(await t.user({ org: `lifecycle-${orgs}`, role: 'admin' }));
      expectError(
        await rotate(viewer.token, own.id),
        403,
        'PERMISSION_DENIED',
        'insufficient permissions',
        'insufficient_permissions',
      );

      // An admin's key that writes integrations, its owner now a member: the role no longer has that scope.
      const downgraded = await user('admin');
      const writer = await t.createKey(downgraded);
      await t.get(IdentityService).setRole(downgraded.organizationId, downgraded.userId, 'member');
      expectError(
        await rotate(downgraded.token, writer.id),
        403,
        'PERMISSION_DENIED',
        'insufficient permissions',
        'scopes_exceed_permissions',
      );

      // An access token may create keys, but not one that writes integrations: it cannot rotate `wide`.
      const owner = await user();
      const wide = await t.createKey(owner, 'wide', { scopes: ['integrations:write', 'integrations:read'] });
      const rotator = await t.createKey(owner, 'rotator', {
        scopes: ['api_keys:create', 'api_keys:revoke', 'integrations:read'],
      });
      const token = await t.exchange(rotator.value);
      expectError(
        await rotate(token, wide.id),
        403,
        'PERMISSION_DENIED',
        'insufficient permissions',
        'scopes_exceed_permissions',
      );
      expect((await getKey(owner.token, wide.id).expect(200)).body.api_key.status).toBe('ACTIVE');
      expect(await keyRows(owner)).toHaveLength(2);
      await rotate(token, rotator.id).expect(201);
    });

    it('an access token that may create keys but not revoke them cannot rotate (a rotation with no grace revokes)', async () => {
      const owner = await user();
      const target = await t.createKey(owner, 'target');
      const creator = await t.createKey(owner, 'creator only', { scopes: ['api_keys:create', ...ADMIN_DEFAULT] });
      const token = await t.exchange(creator.value);
      // As DELETE with the same token is refused, so is a rotation that would revoke at once.
      expectError(
        await t.http().delete(`/v1/user-api-keys/${target.id}`).set(bearer(token)),
        403,
        'PERMISSION_DENIED',
        'insufficient permissions',
        'insufficient_permissions',
      );
      for (const body of [{ grace_period_seconds: 0 }, { grace_period_seconds: 3600 }]) {
        expectError(
          await rotate(token, target.id, body),
          403,
          'PERMISSION_DENIED',
          'insufficient permissions',
          'insufficient_permissions',
        );
      }
      expect((await getKey(owner.token, target.id).expect(200)).body.api_key.status).toBe('ACTIVE');
      expect(await keyRows(owner)).toHaveLength(2);
      // The key can still create one: only rotation needed the second permission.
      await t.http().post('/v1/user-api-keys').set(bearer(token)).send({ label: 'made by creator' }).expect(201);
    });

    it('raced against exchanges of the old key: each exchange gets a token or "api key revoked", and no token of it works after', async () => {
      const admin = await user();
      const old = await t.createKey(admin);
      const before = await t.exchange(old.value);
      // A burst of exchanges sent with the rotation, more started one after another while it runs, and a few
      // after it answered.
      const exchanges = Array.from({ length: 20 }, () => exchangeWith(old.value).then((response) => response));
      const rotation = rotate(admin.token, old.id).then((response) => response);
      let rotating = true;
      void rotation.finally(() => (rotating = false));
      while (rotating) {
        exchanges.push(exchangeWith(old.value).then((response) => response));
        await pause(1); // the pace of the exchanges sent while the rotation runs
      }
      for (let i = 0; i < 5; i += 1) exchanges.push(exchangeWith(old.value).then((response) => response));
      const [rotated, ...answers] = await Promise.all([rotation, ...exchanges]);
      expect(rotated.status).toBe(201);
      const tokens = [before];
      for (const answer of answers) {
        if (answer.status === 200) tokens.push(answer.body.access_token);
        else expectApiKeyRejected(answer, 'api key revoked', 'api_key_revoked');
      }
      // Those started after the rotation answered were all refused.
      expect(answers.slice(-5).map((answer) => answer.status)).toEqual([401, 401, 401, 401, 401]);
      for (const token of tokens) expectBearerRejected(await getKey(token, old.id), 'credential_revoked');
      expectApiKeyRejected(await exchangeWith(old.value), 'api key revoked', 'api_key_revoked');
      await exchangeWith(rotated.body.opaque_key).expect(200);
    });

    it('two rotations of one key at once (no grace): one succeeds, the other finds the key no longer active', async () => {
      const admin = await user();
      const old = await t.createKey(admin);
      const answers = await Promise.all([rotate(admin.token, old.id), rotate(admin.token, old.id)]);
      expect(answers.map((answer) => answer.status).sort()).toEqual([201, 400]);
      expectError(
        answers.find((answer) => answer.status === 400)!,
        400,
        'FAILED_PRECONDITION',
        'api key is not active',
        'api_key_not_active',
      );
      expect((await keyRows(admin)).map((row) => row.status).sort()).toEqual(['ACTIVE', 'REVOKED']);
    });
  });
});
