import { createHmac, randomUUID } from 'node:crypto';
import { crc32 } from 'node:zlib';
import { DataSource } from 'typeorm';
import { KEY_RECORD_FIELDS } from '../support/api-key-records';
import {
  apiKeyAuth,
  bearer,
  expectApiKeyRejected,
  expectBearerRejected,
  expectError,
  expectInvalidArgument,
  ISO_MS,
  KEY_VALUE,
} from '../support/http-assertions';
import { createTestApp, TestApp, testSecrets, TestUser } from '../support/test-app';
import { clockAdvance } from '../support/clock';

/** /v1/user-api-keys: docs/api.md (the API key object and its four routes). */
describe('/v1/user-api-keys', () => {
  let t: TestApp;
  beforeAll(async () => {
    // Many refused exchanges from one address (revocations raced by exchanges): not what the
    // failed-attempt limit is tested with.
    t = await createTestApp({ env: { TOKEN_FAILURE_LIMIT_PER_MINUTE: '100000' } });
  });
  afterAll(() => t.close());

  const create = (user: TestUser, body?: unknown) => {
    const request = t.http().post('/v1/user-api-keys').set(bearer(user.token));
    return body === undefined ? request : request.send(body as object);
  };
  const list = (user: TestUser, query = '') => t.http().get(`/v1/user-api-keys${query}`).set(bearer(user.token));

  describe('POST (create)', () => {
    it('answers 201 with the record, the value once and opaque_key equal to it', async () => {
      const user = await t.user();
      const response = await create(user, { label: 'ci deploy' });

      expect(response.status).toBe(201);
      expect(response.headers['content-type']).toBe('application/json; charset=utf-8');
      expect(response.headers['cache-control']).toBe('no-store');
      const key = response.body.api_key;
      expect(response.body).toStrictEqual({
        api_key: {
          id: expect.stringMatching(/^[0-9a-f-]{36}$/),
          organization_id: user.organizationId,
          user_id: user.userId,
          label: 'ci deploy',
          status: 'ACTIVE',
          // An admin's defaults (docs/api.md#scopes), in catalogue order; no expiry unless asked for.
          scopes: ['api_keys:read', 'audit:read', 'integrations:read', 'integrations:write'],
          expires_at: null,
          created_at: expect.stringMatching(ISO_MS),
          updated_at: key.created_at,
          last_used_at: null,
          last_used_ip: null,
          last_used_user_agent: null,
          replaced_by: null,
          allowed_cidrs: null,
          rate_limit: null,
          revoked_at: null,
          value: expect.stringMatching(KEY_VALUE),
        },
        opaque_key: key.value,
      });
    });

    it('formats the value as env.hex-id.secret.crc32 of the first three segments', async () => {
      const user = await t.user();
      const { body } = await create(user, {}).expect(201);
      const [env, hexId, secret, checksum] = body.opaque_key.split('.');
      expect(env).toBe('dev');
      expect(hexId).toBe(body.api_key.id.replace(/-/g, ''));
      expect(Buffer.from(secret, 'base64url')).toHaveLength(32);
      expect(checksum).toBe(crc32(`${env}.${hexId}.${secret}`).toString(16).padStart(8, '0'));
    });

    it('uses "" as the label when none is given, with or without a body', async () => {
      const user = await t.user();
      const withEmptyObject = await create(user, {}).expect(201);
      const withoutBody = await create(user).expect(201);
      expect(withEmptyObject.body.api_key.label).toBe('');
      expect(withoutBody.body.api_key.label).toBe('');
    });

    it('gives every key its own id and secret', async () => {
      const user = await t.user();
      const a = await t.createKey(user);
      const b = await t.createKey(user);
      expect(a.id).not.toBe(b.id);
      expect(a.value.split('.')[2]).not.toBe(b.value.split('.')[2]);
    });

    it('50 concurrent creations by one user make 50 distinct keys', async () => {
      const user = await t.user();
      const created = await Promise.all(Array.from({ length: 50 }, (_, i) => t.createKey(user, `c${i}`)));
      expect(new Set(created.map((k) => k.id)).size).toBe(50);
      expect(new Set(created.map((k) => k.value)).size).toBe(50);

      const listed = await t.http().get('/v1/user-api-keys?limit=100').set(bearer(user.token)).expect(200);
      expect(listed.body.total_count).toBe(50);
      expect(new Set(listed.body.api_keys.map((k: { id: string }) => k.id))).toEqual(new Set(created.map((k) => k.id)));
    });

    describe('label', () => {
      it('accepts 255 characters', async () => {
        const user = await t.user();
        const label = 'x'.repeat(255);
        const { body } = await create(user, { label }).expect(201);
        expect(body.api_key.label).toBe(label);
      });

      it('counts an emoji as one character: 255 emoji are accepted and read back intact', async () => {
        const user = await t.user();
        const label = '\u{1F511}'.repeat(255);
        const { body } = await create(user, { label }).expect(201);
        const got = await t.http().get(`/v1/user-api-keys/${body.api_key.id}`).set(bearer(user.token)).expect(200);
        expect(got.body.api_key.label).toBe(label);
      });

      it('accepts an empty string', async () => {
        const user = await t.user();
        const { body } = await create(user, { label: '' }).expect(201);
        expect(body.api_key.label).toBe('');
      });

      it.each([
        ['256 characters', 'x'.repeat(256)],
        ['256 emoji', '\u{1F511}'.repeat(256)],
        ['a lone surrogate', 'ab\ud800cd'],
        ['a NUL character', 'a\u0000b'],
      ])('refuses %s with 400', async (_name, label) => {
        const user = await t.user();
        expectInvalidArgument(await create(user, { label }));
      });

      it.each([
        ['a number', 42],
        ['a boolean', true],
        ['null', null],
        ['an array', ['a']],
        ['an object', { text: 'a' }],
      ])('refuses %s with 400', async (_name, label) => {
        const user = await t.user();
        expectInvalidArgument(await create(user, { label }));
      });
    });

    describe('body', () => {
      it('refuses an unknown property', async () => {
        const user = await t.user();
        expectInvalidArgument(await create(user, { label: 'a', scopes: ['all'] }));
      });

      it('refuses an array body', async () => {
        const user = await t.user();
        expectInvalidArgument(await create(user, [{ label: 'a' }]));
      });

      it.each([
        ['malformed JSON', '{"label": "a"'],
        ['a JSON string', '"label"'],
        ['a JSON number', '1'],
        ['null', 'null'],
      ])('refuses %s', async (_name, raw) => {
        const user = await t.user();
        const response = await t
          .http()
          .post('/v1/user-api-keys')
          .set(bearer(user.token))
          .set('Content-Type', 'application/json')
          .send(raw);
        expectInvalidArgument(response);
      });

      it.each([
        ['text/plain', 'label=a'],
        ['application/x-www-form-urlencoded', 'label=a'],
      ])('refuses a %s body', async (type, raw) => {
        const user = await t.user();
        const response = await t
          .http()
          .post('/v1/user-api-keys')
          .set(bearer(user.token))
          .set('Content-Type', type)
          .send(raw);
        expectInvalidArgument(response);
      });

      it('creates nothing when the request is refused', async () => {
        const user = await t.user();
        await create(user, { label: 'x'.repeat(256) }).expect(400);
        await create(user, { bogus: 1 }).expect(400);
        const listed = await list(user, '?include_revoked=true').expect(200);
        expect(listed.body.total_count).toBe(0);
      });
    });
  });

  describe('what is stored', () => {
    it('keeps only an HMAC of the secret: the secret and the value appear nowhere in the row', async () => {
      const user = await t.user();
      const { id, value } = await t.createKey(user, 'stored');
      const secret = value.split('.')[2];
      const row = await t.app
        .get(DataSource)
        .createQueryBuilder()
        .select('*')
        .from('api_keys', 'k')
        .where('k.id = :id', { id })
        .getRawOne<Record<string, unknown>>();

      expect(row).toBeDefined();
      const text = JSON.stringify(row);
      expect(text).not.toContain(secret);
      expect(text).not.toContain(value);
      expect(row!.secret_hash).toMatch(/^[0-9a-f]{64}$/);
      expect(row!.secret_hash).toBe(createHmac('sha256', testSecrets.API_KEY_PEPPER).update(secret).digest('hex'));
      expect(row!.status).toBe('ACTIVE');
      expect(row!.user_id).toBe(user.userId);
      expect(row!.organization_id).toBe(user.organizationId);
      expect(row!.label).toBe('stored');
    });
  });

  describe('GET (list)', () => {
    it("lists the caller's keys newest first with page, limit and total_count defaults", async () => {
      const user = await t.user();
      const created = [];
      for (let i = 0; i < 3; i += 1) {
        created.push(await t.createKey(user, `k${i}`));
        await clockAdvance(3);
      }
      const response = await list(user).expect(200);
      expect(response.headers['content-type']).toBe('application/json; charset=utf-8');
      expect(response.body).toStrictEqual({
        api_keys: created.reverse().map(({ body }) => {
          const { value: _value, ...record } = body.api_key;
          return record;
        }),
        page: 1,
        limit: 20,
        total_count: 3,
      });
    });

    it('orders by created_at desc, then id desc, even when keys share a millisecond', async () => {
      const user = await t.user();
      await Promise.all(Array.from({ length: 12 }, () => t.createKey(user)));
      const { body } = await list(user, '?limit=100').expect(200);
      const keys: Array<{ id: string; created_at: string }> = body.api_keys;
      expect(keys).toHaveLength(12);
      const expected = [...keys].sort((a, b) =>
        a.created_at === b.created_at ? (a.id < b.id ? 1 : -1) : a.created_at < b.created_at ? 1 : -1,
      );
      expect(keys.map((k) => k.id)).toEqual(expected.map((k) => k.id));
    });

    it('pages through every key exactly once', async () => {
      const user = await t.user();
      await Promise.all(Array.from({ length: 25 }, (_, i) => t.createKey(user, `p${i}`)));
      const all = await list(user, '?limit=100').expect(200);
      expect(all.body.total_count).toBe(25);
      expect(all.body.api_keys).toHaveLength(25);

      const first = await list(user).expect(200);
      const second = await list(user, '?page=2').expect(200);
      const third = await list(user, '?page=3').expect(200);
      expect(first.body).toMatchObject({ page: 1, limit: 20, total_count: 25 });
      expect(second.body).toMatchObject({ page: 2, limit: 20, total_count: 25 });
      expect(third.body).toStrictEqual({ api_keys: [], page: 3, limit: 20, total_count: 25 });
      expect([...first.body.api_keys, ...second.body.api_keys]).toEqual(all.body.api_keys);

      const small = await list(user, '?page=3&limit=7').expect(200);
      expect(small.body).toStrictEqual({
        api_keys: all.body.api_keys.slice(14, 21),
        page: 3,
        limit: 7,
        total_count: 25,
      });
    });

    it('accepts limit=100 and limit=1', async () => {
      const user = await t.user();
      await t.createKey(user);
      await t.createKey(user);
      expect((await list(user, '?limit=100').expect(200)).body).toMatchObject({ limit: 100, total_count: 2 });
      const one = await list(user, '?limit=1').expect(200);
      expect(one.body).toMatchObject({ limit: 1, total_count: 2 });
      expect(one.body.api_keys).toHaveLength(1);
    });

    it.each([
      ['limit=101'],
      ['limit=0'],
      ['limit=-1'],
      ['limit=abc'],
      ['limit='],
      ['limit=1&limit=2'],
      ['page=0'],
      ['page=-1'],
      ['page=1.5'],
      ['page=1e2'],
      ['page=abc'],
      ['include_revoked=yes'],
      ['include_revoked=1'],
      ['include_revoked=TRUE'],
      ['unknown=1'],
      ['user_id=00000000-0000-0000-0000-000000000000'],
    ])('refuses ?%s with 400', async (query) => {
      const user = await t.user();
      expectInvalidArgument(await list(user, `?${query}`));
    });

    it('hides revoked keys unless include_revoked=true', async () => {
      const user = await t.user();
      const kept = await t.createKey(user, 'kept');
      const revoked = await t.createKey(user, 'revoked');
      await t.http().delete(`/v1/user-api-keys/${revoked.id}`).set(bearer(user.token)).expect(200);

      const ids = (body: { api_keys: Array<{ id: string }> }) => body.api_keys.map((k) => k.id).sort();
      const hidden = await list(user).expect(200);
      expect(ids(hidden.body)).toEqual([kept.id]);
      expect(hidden.body.total_count).toBe(1);
      const explicitFalse = await list(user, '?include_revoked=false').expect(200);
      expect(ids(explicitFalse.body)).toEqual([kept.id]);

      const shown = await list(user, '?include_revoked=true').expect(200);
      expect(ids(shown.body)).toEqual([kept.id, revoked.id].sort());
      expect(shown.body.total_count).toBe(2);
      expect(shown.body.api_keys.find((k: { id: string }) => k.id === revoked.id).status).toBe('REVOKED');
    });

    it('never carries the value', async () => {
      const user = await t.user();
      const { value } = await t.createKey(user, 'secret-bearing');
      const response = await list(user, '?include_revoked=true').expect(200);
      expect(response.text).not.toContain(value.split('.')[2]);
      for (const key of response.body.api_keys) {
        expect(Object.keys(key).sort()).toEqual(KEY_RECORD_FIELDS);
      }
    });

    it("shows only the caller's own keys", async () => {
      const me = await t.user({ org: 'list-own' });
      const colleague = await t.user({ org: 'list-own' });
      const mine = await t.createKey(me);
      await t.createKey(colleague);
      const { body } = await list(me).expect(200);
      expect(body.api_keys.map((k: { id: string }) => k.id)).toEqual([mine.id]);
      expect(body.total_count).toBe(1);
    });

    it('answers an empty page for a user without keys', async () => {
      const user = await t.user();
      expect((await list(user).expect(200)).body).toStrictEqual({ api_keys: [], page: 1, limit: 20, total_count: 0 });
    });
  });

  describe('GET /:id', () => {
    it('answers {api_key} without the value', async () => {
      const user = await t.user();
      const { id, body: created } = await t.createKey(user, 'one');
      const response = await t.http().get(`/v1/user-api-keys/${id}`).set(bearer(user.token));
      expect(response.status).toBe(200);
      const { value: _value, ...record } = created.api_key;
      expect(response.body).toStrictEqual({ api_key: record });
    });

    it('accepts the id in upper case', async () => {
      const user = await t.user();
      const { id } = await t.createKey(user);
      const response = await t.http().get(`/v1/user-api-keys/${id.toUpperCase()}`).set(bearer(user.token)).expect(200);
      expect(response.body.api_key.id).toBe(id);
    });

    it.each([['not-a-uuid'], ['1234'], ['00000000-0000-0000-0000-00000000000g'], ['%20']])(
      'refuses the id %s with 400',
      async (id) => {
        const user = await t.user();
        expectInvalidArgument(await t.http().get(`/v1/user-api-keys/${id}`).set(bearer(user.token)));
      },
    );

    it('answers 404 "api key not found" for an unknown id', async () => {
      const user = await t.user();
      const response = await t.http().get(`/v1/user-api-keys/${randomUUID()}`).set(bearer(user.token));
      expectError(response, 404, 'NOT_FOUND', 'api key not found', 'api_key_not_found');
    });

    it("answers many reads made at the same time each with its own key, or 404 when it is not the caller's", async () => {
      // On PostgreSQL, lookups made together go to the database as one query: each answer must
      // still be the caller's own key, and never a key of someone else in the same batch.
      const [alice, bob] = [await t.user(), await t.user()];
      const mine = await Promise.all(Array.from({ length: 8 }, (_, i) => t.createKey(alice, `a${i}`)));
      const theirs = await Promise.all(Array.from({ length: 4 }, (_, i) => t.createKey(bob, `b${i}`)));
      const reads = [
        ...mine.map((key) => ({ id: key.id, expected: key.id })),
        ...theirs.map((key) => ({ id: key.id, expected: null })),
        ...Array.from({ length: 4 }, () => ({ id: randomUUID(), expected: null })),
        ...mine.map((key) => ({ id: key.id, expected: key.id })),
      ];
      const responses = await Promise.all(
        reads.map(({ id }) => t.http().get(`/v1/user-api-keys/${id}`).set(bearer(alice.token))),
      );
      responses.forEach((response, i) => {
        if (reads[i].expected === null)
          expectError(response, 404, 'NOT_FOUND', 'api key not found', 'api_key_not_found');
        else
          expect({ status: response.status, id: response.body.api_key.id }).toEqual({
            status: 200,
            id: reads[i].expected,
          });
      });
    });
  });

  describe('DELETE /:id (revoke)', () => {
    it('revokes: 200 with status REVOKED and a new updated_at; GET shows it', async () => {
      const user = await t.user();
      const { id, body: created } = await t.createKey(user, 'to revoke');
      await clockAdvance(5);
      const response = await t.http().delete(`/v1/user-api-keys/${id}`).set(bearer(user.token));
      expect(response.status).toBe(200);
      const { value: _value, ...record } = created.api_key;
      expect(response.body).toStrictEqual({
        api_key: {
          ...record,
          status: 'REVOKED',
          updated_at: expect.stringMatching(ISO_MS),
          revoked_at: response.body.api_key.updated_at,
        },
      });
      expect(response.body.api_key.updated_at > created.api_key.updated_at).toBe(true);

      const got = await t.http().get(`/v1/user-api-keys/${id}`).set(bearer(user.token)).expect(200);
      expect(got.body).toStrictEqual(response.body);
    });

    it('answers 200 with the record unchanged when the key is already revoked', async () => {
      const user = await t.user();
      const { id } = await t.createKey(user);
      const first = await t.http().delete(`/v1/user-api-keys/${id}`).set(bearer(user.token)).expect(200);
      await clockAdvance(5);
      const second = await t.http().delete(`/v1/user-api-keys/${id}`).set(bearer(user.token)).expect(200);
      expect(second.body).toStrictEqual(first.body);
    });

    it('answers 404 "api key not found" for an unknown id and 400 for a non-UUID', async () => {
      const user = await t.user();
      expectError(
        await t.http().delete(`/v1/user-api-keys/${randomUUID()}`).set(bearer(user.token)),
        404,
        'NOT_FOUND',
        'api key not found',
        'api_key_not_found',
      );
      expectInvalidArgument(await t.http().delete('/v1/user-api-keys/nope').set(bearer(user.token)));
    });

    it('stores the revocation, and says when in revoked_at (null before)', async () => {
      const user = await t.user();
      const { id } = await t.createKey(user);
      const before = await t.http().get(`/v1/user-api-keys/${id}`).set(bearer(user.token)).expect(200);
      expect(before.body.api_key.revoked_at).toBeNull();
      const startedAt = Date.now();
      const answer = await t.http().delete(`/v1/user-api-keys/${id}`).set(bearer(user.token)).expect(200);
      const revokedAt = Date.parse(answer.body.api_key.revoked_at as string);
      expect(revokedAt).toBeGreaterThanOrEqual(startedAt - 1000);
      expect(revokedAt).toBeLessThanOrEqual(Date.now());
      const listed = await t.http().get('/v1/user-api-keys?include_revoked=true').set(bearer(user.token)).expect(200);
      expect(listed.body.api_keys).toEqual([
        expect.objectContaining({ id, status: 'REVOKED', revoked_at: answer.body.api_key.revoked_at }),
      ]);
      const row = await t.app
        .get(DataSource)
        .createQueryBuilder()
        .select('k.status', 'status')
        .addSelect('k.revoked_at', 'revoked_at')
        .from('api_keys', 'k')
        .where('k.id = :id', { id })
        .getRawOne<{ status: string; revoked_at: unknown }>();
      expect(row?.status).toBe('REVOKED');
      expect(row?.revoked_at).not.toBeNull();
    });

    it('revoke racing exchanges: no exchange started after the revoke returned succeeds, no minted token survives', async () => {
      const user = await t.user();
      const { id, value } = await t.createKey(user);
      let revoked = false;
      const before: Array<Promise<{ status: number; token?: string }>> = [];
      const after: Array<Promise<{ status: number; message?: string }>> = [];

      const exchangeOnce = async () => {
        const startedAfterRevoke = revoked;
        const response = await t.http().post('/v1/token').set(apiKeyAuth(value));
        if (startedAfterRevoke) {
          expectApiKeyRejected(response, 'api key revoked', 'api_key_revoked');
          return { status: response.status, message: response.body.message };
        }
        expect([200, 401]).toContain(response.status);
        return { status: response.status, token: response.body.access_token };
      };

      // Exchanges in flight while the revoke runs, then more once it has returned.
      for (let i = 0; i < 20; i += 1) before.push(exchangeOnce());
      const revoke = t
        .http()
        .delete(`/v1/user-api-keys/${id}`)
        .set(bearer(user.token))
        .then((response) => {
          revoked = true;
          return response;
        });
      for (let i = 0; i < 20; i += 1) before.push(exchangeOnce());
      expect((await revoke).status).toBe(200);
      for (let i = 0; i < 20; i += 1) after.push(exchangeOnce());

      const raced = await Promise.all(before);
      const late = await Promise.all(after);
      expect(late.map((r) => r.status)).toEqual(Array(20).fill(401));

      // Whatever was minted before the revoke committed is dead now (the key of `client_id` is checked on every request).
      const minted = raced.filter((r) => r.status === 200).map((r) => r.token!);
      for (const token of minted) {
        expectBearerRejected(await t.http().get('/v1/user-api-keys').set(bearer(token)), 'credential_revoked');
      }
    });

    it('concurrent revokes of one key all answer 200 with the same revoked record', async () => {
      const user = await t.user();
      const { id } = await t.createKey(user);
      const responses = await Promise.all(
        Array.from({ length: 10 }, () => t.http().delete(`/v1/user-api-keys/${id}`).set(bearer(user.token))),
      );
      expect(responses.map((r) => r.status)).toEqual(Array(10).fill(200));
      for (const response of responses) expect(response.body).toStrictEqual(responses[0].body);
      expect(responses[0].body.api_key.status).toBe('REVOKED');
    });
  });
});
