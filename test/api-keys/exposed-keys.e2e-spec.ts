import { randomUUID } from 'node:crypto';
import type { Server } from 'node:http';
import { AddressInfo, connect } from 'node:net';
import { Writable } from 'node:stream';
import type { Response } from 'supertest';
import { DataSource } from 'typeorm';
import { ApiKeyCodec } from '../../src/api-keys/api-key-codec';
import type { AuditEvent } from '../../src/audit/audit-event.entity';
import { AuditService } from '../../src/audit/audit.service';
import {
  apiKeyAuth,
  bearer,
  expectApiKeyRejected,
  expectBearerRejected,
  expectError,
  expectInvalidArgument,
} from '../support/http-assertions';
import { failAuditOf } from '../support/audit-failure';
import { redisReachable, TEST_REDIS_URL, uniqueRedisPrefix } from '../support/redis';
import { createTestApp, DATABASE_KIND, TestApp, TestUser } from '../support/test-app';
import { SET_UP_TIMEOUT_MS } from '../support/timeouts';

/**
 * POST /v1/api-keys/exposed (docs/api.md#post-v1api-keysexposed): public, 202 `{}` for every
 * well-formed body whatever it held, each ACTIVE key with its right secret revoked at once (audit
 * `api_key.revoked`, reason `exposed`, in the key's organization), at most EXPOSED_REPORTS_PER_HOUR
 * reports per client address, and the answer's time the same whether a key was revoked or not.
 */
const ROUTE = '/v1/api-keys/exposed';
const codec = new ApiKeyCodec('dev');

/** The parts of a key value: its dashed id and its secret. */
function partsOf(value: string): { id: string; secret: string } {
  const parsed = codec.parse(value);
  if (parsed === null) throw new Error('not a key of this environment');
  return { id: parsed.keyId, secret: parsed.secret };
}

/** A well-formed key of this environment that was never issued. */
const unknownKey = (): string => codec.format(randomUUID(), ApiKeyCodec.newSecret());

/** What a client sees of a 202: status, body, content type, and no header that differs by outcome. */
function answerOf(response: Response): unknown {
  const { date: _date, 'x-request-id': _id, ...headers } = response.headers;
  return { status: response.status, body: response.body, text: response.text, headers };
}

describe(`POST /v1/api-keys/exposed on ${DATABASE_KIND}`, () => {
  let t: TestApp;
  let owner: TestUser;
  let audit: AuditService;

  const report = (keys: unknown, address?: string) => {
    const request = t.http().post(ROUTE);
    if (address !== undefined) request.set('X-Forwarded-For', address);
    return request.send({ keys });
  };
  /** What the owner reads of the key: its status and when it last changed. */
  const statusOf = async (user: TestUser, id: string): Promise<{ status: string; updated_at: string }> => {
    const response = await t.http().get(`/v1/user-api-keys/${id}`).set(bearer(user.token)).expect(200);
    return { status: response.body.api_key.status, updated_at: response.body.api_key.updated_at };
  };
  const revocationsOf = async (organizationId: string, keyId: string): Promise<AuditEvent[]> =>
    (await audit.list(organizationId, 1000)).filter(
      (event) => event.action === 'api_key.revoked' && event.targetId === keyId,
    );

  beforeAll(async () => {
    t = await createTestApp({
      env: { EXPOSED_REPORTS_PER_HOUR: '100000', EXPOSED_REPORT_MIN_RESPONSE_MS: '0', TRUST_PROXY: 'loopback' },
    });
    audit = t.get(AuditService);
    owner = await t.user({ org: 'exposed-a', role: 'member' });
  });
  afterAll(() => t.close());

  describe('a real, ACTIVE key with its secret', () => {
    it('is revoked at once: 202 {}, then REVOKED, its exchange refused and its access tokens dead', async () => {
      const { id, value } = await t.createKey(owner, 'leaked');
      const accessToken = await t.exchange(value);
      await t.http().get('/v1/user-api-keys').set(bearer(accessToken)).expect(200);

      const response = await report([value]).expect(202);
      expect(response.body).toStrictEqual({});
      expect(response.headers['content-type']).toBe('application/json; charset=utf-8');

      // Read right after the answer: the revocation is already committed.
      expectApiKeyRejected(
        await t.http().post('/v1/token').set(apiKeyAuth(value)),
        'api key revoked',
        'api_key_revoked',
      );
      expectBearerRejected(await t.http().get('/v1/user-api-keys').set(bearer(accessToken)), 'credential_revoked');
      expect((await statusOf(owner, id)).status).toBe('REVOKED');
    });

    it('is revoked past its expires_at too: EXPIRED becomes REVOKED, reason exposed', async () => {
      const { id, value } = await t.createKey(owner, 'expired and leaked');
      await t.get(DataSource).query(`UPDATE api_keys SET expires_at = '2020-01-01T00:00:00.000Z' WHERE id = '${id}'`);
      expect((await statusOf(owner, id)).status).toBe('EXPIRED');
      await report([value]).expect(202, {});
      expect((await statusOf(owner, id)).status).toBe('REVOKED');
      expect(await revocationsOf(owner.organizationId, id)).toEqual([expect.objectContaining({ reason: 'exposed' })]);
    });

    it('is recorded once as api_key.revoked, reason exposed, no actor, in the key’s organization, with the request', async () => {
      const { id, value } = await t.createKey(owner);
      const response = await report([value], '198.51.100.23').set('X-Request-Id', 'scanner-report-1').expect(202);
      expect(response.headers['x-request-id']).toBe('scanner-report-1');
      const events = await revocationsOf(owner.organizationId, id);
      expect(events).toEqual([
        expect.objectContaining({
          action: 'api_key.revoked',
          reason: 'exposed',
          organizationId: owner.organizationId,
          actorUserId: null,
          actorApiKeyId: null,
          targetType: 'api_key',
          targetId: id,
          clientIp: '198.51.100.23',
          requestId: 'scanner-report-1',
        }),
      ]);
      // The stored event never holds the key's value or secret.
      expect(JSON.stringify(events)).not.toContain(partsOf(value).secret);
    });

    it('is revoked whichever organization it belongs to, each event in the key’s own organization', async () => {
      const other = await t.user({ org: 'exposed-b', role: 'admin' });
      const mine = await t.createKey(owner);
      const theirs = await t.createKey(other);
      await report([mine.value, theirs.value]).expect(202);

      expect((await statusOf(owner, mine.id)).status).toBe('REVOKED');
      expect((await statusOf(other, theirs.id)).status).toBe('REVOKED');
      expect(await revocationsOf(owner.organizationId, mine.id)).toHaveLength(1);
      expect(await revocationsOf(other.organizationId, theirs.id)).toHaveLength(1);
      expect(await revocationsOf(owner.organizationId, theirs.id)).toEqual([]);
      expect(await revocationsOf(other.organizationId, mine.id)).toEqual([]);
    });

    it('listed several times in one report is revoked once, with one event', async () => {
      const { id, value } = await t.createKey(owner);
      await report([value, value, value]).expect(202);
      expect((await statusOf(owner, id)).status).toBe('REVOKED');
      expect(await revocationsOf(owner.organizationId, id)).toHaveLength(1);
    });

    it('reported again later changes nothing and records nothing more', async () => {
      const { id, value } = await t.createKey(owner);
      await report([value]).expect(202);
      const first = await statusOf(owner, id);
      const again = await report([value]).expect(202);
      expect(again.body).toStrictEqual({});
      expect(await statusOf(owner, id)).toEqual(first);
      expect(await revocationsOf(owner.organizationId, id)).toHaveLength(1);
    });

    it('reported by ten reports at the same time is revoked once, with one event', async () => {
      const { id, value } = await t.createKey(owner);
      const answers = await Promise.all(Array.from({ length: 10 }, () => report([value])));
      expect(answers.map((answer) => answer.status)).toEqual(Array<number>(10).fill(202));
      expect((await statusOf(owner, id)).status).toBe('REVOKED');
      expect(await revocationsOf(owner.organizationId, id)).toHaveLength(1);
    });

    it('is revoked among 99 other entries of every kind, and only the real ones are', async () => {
      const real = await Promise.all([t.createKey(owner), t.createKey(owner), t.createKey(owner)]);
      const untouched = await t.createKey(owner);
      const { id: untouchedId, secret } = partsOf(untouched.value);
      const noise = [
        codec.format(untouchedId, ApiKeyCodec.newSecret()), // right id, wrong secret
        untouched.value.replace(/^dev\./, 'prod.'), // another environment, checksum now wrong
        new ApiKeyCodec('prod').format(untouchedId, secret), // another environment, well-formed there
        `${untouched.value.slice(0, -1)}${untouched.value.endsWith('0') ? '1' : '0'}`, // checksum broken
        untouched.value.toUpperCase(),
        ` ${untouched.value}`,
        '',
        'not a key at all',
        'x'.repeat(512),
      ];
      const keys = [...real.map((key) => key.value), ...noise];
      while (keys.length < 100) keys.push(unknownKey());
      await report(keys).expect(202);

      for (const key of real) expect((await statusOf(owner, key.id)).status).toBe('REVOKED');
      expect((await statusOf(owner, untouched.id)).status).toBe('ACTIVE');
      expect(await revocationsOf(owner.organizationId, untouched.id)).toEqual([]);
      await t.exchange(untouched.value);
    });
  });

  describe('nothing is revoked', () => {
    it('for the right key id with a wrong secret', async () => {
      const { id, value } = await t.createKey(owner);
      await report([codec.format(id, ApiKeyCodec.newSecret())]).expect(202);
      expect((await statusOf(owner, id)).status).toBe('ACTIVE');
      expect(await revocationsOf(owner.organizationId, id)).toEqual([]);
      await t.exchange(value);
    });

    it('for the key with another environment segment (well-formed there)', async () => {
      const { id, value } = await t.createKey(owner);
      const { secret } = partsOf(value);
      await report([new ApiKeyCodec('prod').format(id, secret)]).expect(202);
      expect((await statusOf(owner, id)).status).toBe('ACTIVE');
      await t.exchange(value);
    });

    it('for a key its owner revoked already: it stays as it was, with its one event', async () => {
      const { id, value } = await t.createKey(owner);
      await t.http().delete(`/v1/user-api-keys/${id}`).set(bearer(owner.token)).expect(200);
      const before = await statusOf(owner, id);
      await report([value]).expect(202);
      expect(await statusOf(owner, id)).toEqual(before);
      const events = await revocationsOf(owner.organizationId, id);
      expect(events.map((event) => event.reason)).toEqual(['user']);
    });
  });

  describe('the answer never tells whether a key was real', () => {
    it('is the same 202 {} for a real key, an unknown key, a wrong secret, a revoked key and garbage', async () => {
      const real = await t.createKey(owner);
      const revoked = await t.createKey(owner);
      await report([revoked.value]).expect(202);
      const wrongSecret = await t.createKey(owner);
      const answers = [
        await report([real.value]),
        await report([unknownKey()]),
        await report([codec.format(wrongSecret.id, ApiKeyCodec.newSecret())]),
        await report([revoked.value]),
        await report(['nothing like a key']),
        await report([real.value, unknownKey(), 'garbage']),
      ];
      const expected = answerOf(answers[0]);
      expect(expected).toMatchObject({ status: 202, body: {}, text: '{}' });
      for (const answer of answers) expect(answerOf(answer)).toEqual(expected);
      expect((await statusOf(owner, real.id)).status).toBe('REVOKED');
    });

    it('needs no authentication, and ignores a Bearer header (even a bad one)', async () => {
      const { id, value } = await t.createKey(owner);
      await t
        .http()
        .post(ROUTE)
        .set(bearer('not-a-token'))
        .send({ keys: [value] })
        .expect(202, {});
      expect((await statusOf(owner, id)).status).toBe('REVOKED');
    });
  });

  describe('a malformed body is 400 INVALID_ARGUMENT and revokes nothing', () => {
    // Each body carries a real key wherever it has a place for one, so that "revokes nothing" can fail.
    it.each<[string, (key: string) => unknown]>([
      ['keys missing', () => ({})],
      ['keys null', () => ({ keys: null })],
      ['keys a string', (key) => ({ keys: key })],
      ['keys an object', (key) => ({ keys: { 0: key } })],
      ['no entry', () => ({ keys: [] })],
      ['101 entries', (key) => ({ keys: [key, ...Array.from({ length: 100 }, () => 'x')] })],
      ['a number entry', (key) => ({ keys: [key, 7] })],
      ['a null entry', (key) => ({ keys: [key, null] })],
      ['an array entry', (key) => ({ keys: [key, [key]] })],
      ['an object entry', (key) => ({ keys: [key, { key }] })],
      ['an entry of 513 characters', (key) => ({ keys: [key, 'x'.repeat(513)] })],
      [
        'an entry of 513 characters, half outside the BMP',
        (key) => ({ keys: [key, '😀'.repeat(257) + 'x'.repeat(256)] }),
      ],
      ['an unknown property', (key) => ({ keys: [key], source: 'github' })],
      ['a JSON array', (key) => [key]],
      ['a JSON string', (key) => key],
      ['null', () => null],
    ])('%s', async (_case, body) => {
      const { id, value } = await t.createKey(owner);
      const response = await t
        .http()
        .post(ROUTE)
        .set('Content-Type', 'application/json')
        .send(JSON.stringify(body(value)));
      expectInvalidArgument(response);
      expect((await statusOf(owner, id)).status).toBe('ACTIVE');
    });

    it('malformed JSON', async () => {
      expectInvalidArgument(await t.http().post(ROUTE).set('Content-Type', 'application/json').send('{"keys": ['));
    });

    it('no body at all, or another content type', async () => {
      expectInvalidArgument(await t.http().post(ROUTE));
      expectInvalidArgument(await t.http().post(ROUTE).set('Content-Type', 'text/plain').send('dev.x'));
    });

    it('accepts the limits themselves: 100 entries, an entry of 512 characters', async () => {
      await report(Array.from({ length: 100 }, (_, i) => `entry ${i}`)).expect(202, {});
      await report(['😀'.repeat(512)]).expect(202, {});
    });
  });

  it('is in the OpenAPI document: public, the body schema, 202 and the error answers', async () => {
    const document = (await t.http().get('/openapi.json').expect(200)).body;
    const operation = document.paths[ROUTE].post;
    expect(operation.security ?? []).toEqual([]);
    expect(Object.keys(operation.responses).sort()).toEqual(['202', '400', '413', '429', '500', '503']);
    expect(document.components.schemas.ReportExposedKeysDto).toMatchObject({
      required: ['keys'],
      properties: { keys: { type: 'array', minItems: 1, maxItems: 100, items: { type: 'string', maxLength: 512 } } },
    });
  });

  it('takes the largest well-formed reports, beyond BODY_LIMIT_BYTES: 100 entries of 512 characters', async () => {
    await report(Array.from({ length: 100 }, () => 'x'.repeat(512))).expect(202, {});
    await report(Array.from({ length: 100 }, () => '\u00e9'.repeat(512))).expect(202, {});
    await report(Array.from({ length: 100 }, () => '😀'.repeat(512))).expect(202, {});
  });

  it('is 413 past 320 KiB, before anything else', async () => {
    const response = await report(Array.from({ length: 100 }, () => 'x'.repeat(3300)));
    expectError(response, 413, 'INVALID_ARGUMENT', 'request body too large', 'body_too_large');
  });
});

describe(`POST /v1/api-keys/exposed: at most EXPOSED_REPORTS_PER_HOUR per client address on ${DATABASE_KIND}`, () => {
  let t: TestApp;
  let owner: TestUser;

  const report = (address: string, body: unknown) =>
    t
      .http()
      .post(ROUTE)
      .set('X-Forwarded-For', address)
      .set('Content-Type', 'application/json')
      .send(JSON.stringify(body));
  const statusOf = async (id: string): Promise<string> =>
    (await t.http().get(`/v1/user-api-keys/${id}`).set(bearer(owner.token)).expect(200)).body.api_key.status;

  beforeAll(async () => {
    t = await createTestApp({
      env: { EXPOSED_REPORTS_PER_HOUR: '3', EXPOSED_REPORT_MIN_RESPONSE_MS: '0', TRUST_PROXY: 'loopback' },
    });
    owner = await t.user({ org: 'exposed-limit' });
  });
  afterAll(() => t.close());

  it('answers 429 with Retry-After (the rest of the hour) once the address has used its reports, and checks nothing', async () => {
    for (let i = 0; i < 3; i += 1) await report('203.0.113.10', { keys: [unknownKey()] }).expect(202);
    const { id, value } = await t.createKey(owner);
    const refused = await report('203.0.113.10', { keys: [value] });
    expectError(refused, 429, 'RESOURCE_EXHAUSTED', 'too many requests', 'too_many_exposed_reports');
    const retryAfter = Number(refused.headers['retry-after']);
    expect(retryAfter).toBeGreaterThan(3500);
    expect(retryAfter).toBeLessThanOrEqual(3600);
    // Refused before any database work: the real key is still ACTIVE.
    expect(await statusOf(id)).toBe('ACTIVE');
    // Another address has its own allowance.
    await report('203.0.113.11', { keys: [value] }).expect(202);
    expect(await statusOf(id)).toBe('REVOKED');
  });

  it('counts every request, malformed ones too, and refuses before validating the body', async () => {
    for (let i = 0; i < 3; i += 1) expectInvalidArgument(await report('203.0.113.20', { keys: [] }));
    expectError(
      await report('203.0.113.20', { keys: [] }),
      429,
      'RESOURCE_EXHAUSTED',
      'too many requests',
      'too_many_exposed_reports',
    );
    expectError(
      await report('203.0.113.20', { keys: ['x'] }),
      429,
      'RESOURCE_EXHAUSTED',
      'too many requests',
      'too_many_exposed_reports',
    );
  });

  it('takes the slot before reading the body: past the limit, 429 before a byte of it is sent', async () => {
    for (let i = 0; i < 3; i += 1) await report('203.0.113.25', { keys: ['x'] }).expect(202);
    // Malformed JSON and a body over the limit are no longer read at all.
    const malformed = await t
      .http()
      .post(ROUTE)
      .set('X-Forwarded-For', '203.0.113.25')
      .set('Content-Type', 'application/json')
      .send('{"keys":');
    expectError(malformed, 429, 'RESOURCE_EXHAUSTED', 'too many requests', 'too_many_exposed_reports');
    const server = t.app.getHttpServer() as Server;
    if (!server.listening) await new Promise<void>((ready) => server.listen(0, '127.0.0.1', ready));
    const { port } = server.address() as AddressInfo;
    // Headers announcing 300 KB, and no body: the answer comes anyway.
    const head = await new Promise<string>((resolve, reject) => {
      const socket = connect(port, '127.0.0.1');
      let received = '';
      const timer = setTimeout(
        () => reject(new Error(`no answer without the body; got ${JSON.stringify(received)}`)),
        3000,
      );
      socket.on('data', (chunk) => {
        received += chunk.toString('latin1');
        if (received.includes('\r\n\r\n')) {
          clearTimeout(timer);
          socket.destroy();
          resolve(received);
        }
      });
      socket.on('error', reject);
      socket.write(
        `POST ${ROUTE} HTTP/1.1\r\nHost: localhost\r\nX-Forwarded-For: 203.0.113.25\r\n` +
          'Content-Type: application/json\r\nContent-Length: 300000\r\n\r\n',
      );
    });
    expect(head).toMatch(/^HTTP\/1\.1 429 /);
    expect(head).toMatch(/\r\nretry-after: \d+\r\n/i);
  });

  it('counts an IPv6 /64 as one address', async () => {
    await report('2001:db8:7:7::1', { keys: ['x'] }).expect(202);
    await report('2001:db8:7:7::2', { keys: ['x'] }).expect(202);
    await report('2001:db8:7:7:ffff::3', { keys: ['x'] }).expect(202);
    expectError(
      await report('2001:db8:7:7::4', { keys: ['x'] }),
      429,
      'RESOURCE_EXHAUSTED',
      'too many requests',
      'too_many_exposed_reports',
    );
    await report('2001:db8:7:8::1', { keys: ['x'] }).expect(202);
  });

  it('lets a burst through no further than the limit', async () => {
    const answers = await Promise.all(Array.from({ length: 20 }, () => report('203.0.113.30', { keys: ['x'] })));
    const statuses = answers.map((answer) => answer.status).sort();
    expect(statuses).toEqual([...Array<number>(3).fill(202), ...Array<number>(17).fill(429)]);
  });
});

(redisReachable() ? describe : describe.skip)(
  `POST /v1/api-keys/exposed: the limit is shared by every instance through Redis on ${DATABASE_KIND}`,
  () => {
    let first: TestApp;
    let second: TestApp;

    beforeAll(async () => {
      const env = {
        EXPOSED_REPORTS_PER_HOUR: '3',
        EXPOSED_REPORT_MIN_RESPONSE_MS: '0',
        TRUST_PROXY: 'loopback',
        REDIS_URL: TEST_REDIS_URL,
        REDIS_KEY_PREFIX: uniqueRedisPrefix(),
      };
      first = await createTestApp({ env });
      second = await createTestApp({ env, database: first.database });
    }, SET_UP_TIMEOUT_MS);
    afterAll(async () => {
      await second.close();
      await first.close();
    });

    it('counts the reports one address makes to either instance together', async () => {
      const send = (app: TestApp) =>
        app
          .http()
          .post(ROUTE)
          .set('X-Forwarded-For', '203.0.113.40')
          .send({ keys: ['x'] });
      await send(first).expect(202);
      await send(second).expect(202);
      await send(first).expect(202);
      expectError(await send(second), 429, 'RESOURCE_EXHAUSTED', 'too many requests', 'too_many_exposed_reports');
      expectError(await send(first), 429, 'RESOURCE_EXHAUSTED', 'too many requests', 'too_many_exposed_reports');
    });
  },
);

describe(`POST /v1/api-keys/exposed: revoked at once on every instance, answered at a floor, on ${DATABASE_KIND}`, () => {
  const FLOOR_MS = 300;
  let first: TestApp;
  let second: TestApp;
  let owner: TestUser;
  let captured = '';
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      captured += chunk.toString('utf8');
      done();
    },
  });

  beforeAll(async () => {
    const env = { EXPOSED_REPORTS_PER_HOUR: '1000', EXPOSED_REPORT_MIN_RESPONSE_MS: String(FLOOR_MS) };
    first = await createTestApp({ env: { ...env, LOG_LEVEL: 'info' }, logStream: sink });
    second = await createTestApp({ env, database: first.database });
    owner = await first.user({ org: 'exposed-floor' });
  }, SET_UP_TIMEOUT_MS);
  afterAll(async () => {
    await second.close();
    await first.close();
  });

  const timed = async (keys: string[]): Promise<{ response: Response; ms: number }> => {
    const started = performance.now();
    const response = await first.http().post(ROUTE).send({ keys });
    return { response, ms: performance.now() - started };
  };

  it('answers a report of a real key and one of an unknown key both at the floor, never sooner', async () => {
    const real = await first.createKey(owner);
    const revoking = await timed([real.value]);
    const unknown = await timed([unknownKey()]);
    const garbage = await timed(['garbage']);
    for (const { response, ms } of [revoking, unknown, garbage]) {
      expect(response.status).toBe(202);
      expect(ms).toBeGreaterThanOrEqual(FLOOR_MS - 1);
      // Far below the floor's own size: the work is hidden inside it, not added to it.
      expect(ms).toBeLessThan(FLOOR_MS + 250);
    }
    // And the revocation was committed before the answer: the other instance refuses the key at once.
    expectApiKeyRejected(
      await second.http().post('/v1/token').set(apiKeyAuth(real.value)),
      'api key revoked',
      'api_key_revoked',
    );
  });

  it('logs the revoked key ids, never a reported value or secret', async () => {
    captured = '';
    const real = await first.createKey(owner);
    const unknown = unknownKey();
    await first
      .http()
      .post(ROUTE)
      .send({ keys: [real.value, unknown] })
      .expect(202);
    expect(captured).toContain(real.id);
    expect(captured).toContain('api keys revoked as exposed');
    for (const secret of [real.value, partsOf(real.value).secret, unknown, partsOf(unknown).secret]) {
      expect(captured).not.toContain(secret);
    }
  });
});

describe(`POST /v1/api-keys/exposed: revocations and their audit entries in one transaction on ${DATABASE_KIND}`, () => {
  let t: TestApp;
  let dataSource: DataSource;

  beforeAll(async () => {
    t = await createTestApp({ env: { EXPOSED_REPORT_MIN_RESPONSE_MS: '0' } });
    dataSource = t.get(DataSource);
  });
  afterAll(() => t.close());

  it('leaves every reported key ACTIVE when an audit entry cannot be written (500)', async () => {
    const owner = await t.user({ org: 'exposed-atomic' });
    const keys = [await t.createKey(owner), await t.createKey(owner)];
    const undo = await failAuditOf(dataSource, 'api_key.revoked');
    let response: Response;
    try {
      response = await t
        .http()
        .post(ROUTE)
        .send({ keys: keys.map((key) => key.value) });
    } finally {
      await undo();
    }
    expectError(response, 500, 'INTERNAL', 'internal error', 'internal');
    for (const key of keys) {
      const { body } = await t.http().get(`/v1/user-api-keys/${key.id}`).set(bearer(owner.token)).expect(200);
      expect(body.api_key.status).toBe('ACTIVE');
    }
  });
});
