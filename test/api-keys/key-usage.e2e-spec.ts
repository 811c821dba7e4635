import { DataSource } from 'typeorm';
import { CredentialUseRecorder } from '../../src/credentials/credential-use.recorder';
import { ApiKeyCodec } from '../../src/api-keys/api-key-codec';
import { apiKeyAuth, bearer } from '../support/http-assertions';
import { createTestApp, createTestDatabase, DATABASE_KIND, TestApp, TestDatabase, TestUser } from '../support/test-app';
import { clockAdvance } from '../support/clock';
import { SET_UP_TIMEOUT_MS } from '../support/timeouts';

/** The usage fields of a key record (docs/api.md#usage-fields). */
interface Usage {
  last_used_at: string | null;
  last_used_ip: string | null;
  last_used_user_agent: string | null;
}

/** A header value as Node sends and receives it: the UTF-8 bytes, one Latin-1 character each. */
const onTheWire = (text: string): string => Buffer.from(text, 'utf8').toString('latin1');

/** Every test's exchanges come through a proxy on loopback that the service trusts, unless said otherwise. */
const PROXIED = { TRUST_PROXY: 'loopback', API_KEY_LAST_USED_FLUSH_MS: '60000' };

/**
 * `last_used_at`, `last_used_ip` and `last_used_user_agent` (docs/api.md#usage-fields): set
 * together by each successful exchange, kept in memory and written in batches (never on every
 * exchange), shown at once by the instance that served the exchange, never moving backwards.
 * The periodic flush is made rare (60 s): each test flushes when it means to.
 */
describe(`key usage fields on ${DATABASE_KIND}`, () => {
  let database: TestDatabase;
  let t: TestApp;
  let other: TestApp;

  beforeAll(async () => {
    database = createTestDatabase();
    t = await createTestApp({ database, env: PROXIED });
    other = await createTestApp({ database, env: PROXIED });
  }, SET_UP_TIMEOUT_MS);
  afterAll(async () => {
    await t.close();
    await other.close();
    await database.drop();
  });

  const exchange = (app: TestApp, value: string, headers: Record<string, string> = {}) =>
    app.http().post('/v1/token').set(apiKeyAuth(value)).set(headers);
  const usageOf = (body: Usage): Usage => ({
    last_used_at: body.last_used_at,
    last_used_ip: body.last_used_ip,
    last_used_user_agent: body.last_used_user_agent,
  });
  /** The usage fields as GET /v1/user-api-keys/{id} on `app` shows them. */
  const shown = async (app: TestApp, owner: TestUser, id: string): Promise<Usage> =>
    usageOf((await app.http().get(`/v1/user-api-keys/${id}`).set(bearer(owner.token)).expect(200)).body.api_key);
  /** The usage fields as stored. */
  const stored = async (id: string): Promise<Usage> => {
    const [row] = await t
      .get(DataSource)
      .query<
        Array<{ last_used_at: Date | string | null; last_used_ip: string | null; last_used_user_agent: string | null }>
      >(`SELECT last_used_at, last_used_ip, last_used_user_agent FROM api_keys WHERE id = '${id}'`);
    return {
      last_used_at: row.last_used_at === null ? null : new Date(row.last_used_at).toISOString(),
      last_used_ip: row.last_used_ip,
      last_used_user_agent: row.last_used_user_agent,
    };
  };
  const NONE: Usage = { last_used_at: null, last_used_ip: null, last_used_user_agent: null };

  it('are null until the first exchange, which sets all three: shown at once, stored at the flush', async () => {
    const owner = await t.user({ org: 'usage' });
    const { id, value } = await t.createKey(owner);
    expect(await shown(t, owner, id)).toEqual(NONE);

    await exchange(t, value, { 'X-Forwarded-For': '203.0.113.7', 'User-Agent': 'deploy-bot/2.1' }).expect(200);
    const used = await shown(t, owner, id);
    expect(used).toEqual({
      last_used_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      last_used_ip: '203.0.113.7',
      last_used_user_agent: 'deploy-bot/2.1',
    });
    // Every record of the key shows them: the owner's list and the organization's.
    const listed = await t.http().get('/v1/user-api-keys').set(bearer(owner.token)).expect(200);
    expect(usageOf(listed.body.api_keys[0])).toEqual(used);
    const organization = await t.http().get('/v1/organization/api-keys').set(bearer(owner.token)).expect(200);
    expect(usageOf(organization.body.api_keys.find((key: { id: string }) => key.id === id))).toEqual(used);

    // Not written by the exchange itself: another instance sees nothing until the flush.
    expect(await stored(id)).toEqual(NONE);
    expect(await shown(other, owner, id)).toEqual(NONE);
    await t.get(CredentialUseRecorder).flush();
    expect(await stored(id)).toEqual(used);
    expect(await shown(other, owner, id)).toEqual(used);
  });

  it('record the address the rate limits see: X-Forwarded-For only through a trusted proxy, and only an address', async () => {
    const direct = await createTestApp({ database, env: { API_KEY_LAST_USED_FLUSH_MS: '60000' } });
    try {
      const owner = await t.user({ org: 'usage' });
      const key = await t.createKey(owner);
      // No trusted proxy: the header is the client's own text, the socket's address is recorded.
      await exchange(direct, key.value, { 'X-Forwarded-For': '203.0.113.7' }).expect(200);
      expect((await shown(direct, owner, key.id)).last_used_ip).toMatch(/^(::ffff:)?127\.0\.0\.1$/);
      // A trusted proxy that passes on text that is no address: the proxy's address, never the text.
      await exchange(t, key.value, { 'X-Forwarded-For': '<script>' }).expect(200);
      expect((await shown(t, owner, key.id)).last_used_ip).toMatch(/^(::ffff:)?127\.0\.0\.1$/);
      // An IPv6 client behind the proxy.
      await exchange(t, key.value, { 'X-Forwarded-For': '2001:db8::17' }).expect(200);
      expect((await shown(t, owner, key.id)).last_used_ip).toBe('2001:db8::17');
    } finally {
      await direct.close();
    }
  });

  it('keep the User-Agent without control characters, cut to 255 characters (an emoji is one); null without one', async () => {
    const owner = await t.user({ org: 'usage' });
    const long = await t.createKey(owner);
    const emoji = '\u{1F600}';
    await exchange(t, long.value, { 'User-Agent': onTheWire(`\tcafé ${emoji.repeat(300)}`) }).expect(200);
    const expected = `café ${emoji.repeat(250)}`;
    expect([...expected]).toHaveLength(255);
    expect((await shown(t, owner, long.id)).last_used_user_agent).toBe(expected);

    const none = await t.createKey(owner);
    await exchange(t, none.value, { 'X-Forwarded-For': '198.51.100.9' }).expect(200);
    expect(await shown(t, owner, none.id)).toEqual({
      last_used_at: expect.any(String),
      last_used_ip: '198.51.100.9',
      last_used_user_agent: null,
    });

    await t.get(CredentialUseRecorder).flush();
    expect((await stored(long.id)).last_used_user_agent).toBe(expected);
    expect((await stored(none.id)).last_used_user_agent).toBeNull();
    expect(await shown(other, owner, long.id)).toEqual(await shown(t, owner, long.id));
  });

  it('take the newest exchange before a flush: the three fields from that one use', async () => {
    const owner = await t.user({ org: 'usage' });
    const { id, value } = await t.createKey(owner);
    await exchange(t, value, { 'X-Forwarded-For': '198.51.100.1', 'User-Agent': 'first' }).expect(200);
    const first = await shown(t, owner, id);
    await clockAdvance(5);
    await exchange(t, value, { 'X-Forwarded-For': '198.51.100.2' }).expect(200);
    const second = await shown(t, owner, id);
    expect(second.last_used_at! > first.last_used_at!).toBe(true);
    // The newer use had no User-Agent: null, not the older use's.
    expect(second).toMatchObject({ last_used_ip: '198.51.100.2', last_used_user_agent: null });
    await t.get(CredentialUseRecorder).flush();
    expect(await stored(id)).toEqual(second);
  });

  it('never move backwards: an older use flushed after a newer one (two instances) changes none of them', async () => {
    const owner = await t.user({ org: 'usage' });
    const { id, value } = await t.createKey(owner);
    // The older use on the other instance, the newer one here; this instance flushes first.
    await exchange(other, value, { 'X-Forwarded-For': '198.51.100.10', 'User-Agent': 'older' }).expect(200);
    const older = await shown(other, owner, id);
    await clockAdvance(5);
    await exchange(t, value, { 'X-Forwarded-For': '198.51.100.20', 'User-Agent': 'newer' }).expect(200);
    const newer = await shown(t, owner, id);
    expect(newer.last_used_at! > older.last_used_at!).toBe(true);

    await t.get(CredentialUseRecorder).flush();
    expect(await stored(id)).toEqual(newer);
    // The other instance's pending use is older than what is stored now: its reads show the stored one.
    expect(await shown(other, owner, id)).toEqual(newer);
    await other.get(CredentialUseRecorder).flush();
    expect(await stored(id)).toEqual(newer);
    expect(await shown(other, owner, id)).toEqual(newer);
  });

  it('are not set by a refused exchange', async () => {
    const owner = await t.user({ org: 'usage' });
    const { id } = await t.createKey(owner);
    const wrongSecret = new ApiKeyCodec('dev').format(id, ApiKeyCodec.newSecret());
    await exchange(t, wrongSecret, { 'X-Forwarded-For': '198.51.100.30', 'User-Agent': 'guess' }).expect(401);
    await exchange(t, 'not a key').expect(401);
    await t.get(CredentialUseRecorder).flush();
    expect(await shown(t, owner, id)).toEqual(NONE);
    expect(await stored(id)).toEqual(NONE);
  });
});
