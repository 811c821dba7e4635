import { randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import { decodeJwt } from 'jose';
import type { Response, Test } from 'supertest';
import { DataSource, IsNull } from 'typeorm';
import { ShutdownState } from '../../src/common/shutdown.state';
import { SsfStreams1765200000000 } from '../../src/database/migrations/1765200000000-ssf-streams';
import { ResourceServersService } from '../../src/resource-servers/resource-servers.service';
import { PollHub } from '../../src/ssf/poll-hub';
import { CREDENTIAL_CHANGE, SsfDelivery, SsfEvent } from '../../src/ssf/ssf-event.entity';
import { SsfPollService } from '../../src/ssf/ssf-poll.service';
import { SsfStream } from '../../src/ssf/ssf-stream.entity';
import { MAX_INSTANCE_STREAMS } from '../../src/ssf/ssf-streams.service';
import { SsfRepository } from '../../src/ssf/ssf.repository';
import { SsfRetention } from '../../src/ssf/ssf-retention';
import { expectError, UUID } from '../support/http-assertions';
import { clockAdvance } from '../support/clock';
import { waitFor } from '../support/wait';
import { createTestApp, DATABASE_KIND, TEST_ISSUER, TestApp, TestUser } from '../support/test-app';

/**
 * Instance streams and the feed in production (docs/adr/0031-revocation-feed-in-production.md): SSF 1.0 stream
 * management, a delivery of every event to every stream, idle streams deleted, the poll's 64 KB body, the cap on
 * waiting polls, one read per wake-up, the drain at shutdown, and answered polls logged at debug.
 */
const POLL = 'urn:ietf:rfc:8936';
const TOKEN_CLAIMS_CHANGE = 'https://schemas.openid.net/secevent/caep/event-type/token-claims-change';
const EVENTS = [CREDENTIAL_CHANGE, TOKEN_CLAIMS_CHANGE];
const BASE = 'http://localhost:3000';
const basic = (id: string, secret: string): string => `Basic ${Buffer.from(`${id}:${secret}`).toString('base64')}`;
const notFound = { code: 'NOT_FOUND', message: 'stream not found', reason: 'stream_not_found' };
/** Sends the request now (supertest sends it only when awaited). */
const sent = (test: Test): Promise<Response> => test.then((response) => response);

interface Server {
  clientId: string;
  clientSecret: string;
  audience: string;
}

describe(`instance streams on ${DATABASE_KIND}`, () => {
  let t: TestApp;
  let admin: TestUser;
  let server: Server;
  let other: Server;
  /** Polls' own reads of their pending SETs under way (the read after a long poll enters the hub). */
  let ownReads = 0;

  async function register(app: TestApp, name: string): Promise<Server> {
    const audience = `https://${name}.example.com`;
    return { ...(await app.get(ResourceServersService).register(name, audience)), audience };
  }

  beforeAll(async () => {
    t = await createTestApp({ env: { SSF_POLL_WAIT_SECONDS: '3', SSF_MAX_WAITING_POLLS: '2' } });
    admin = await t.user({ org: 'streams', role: 'admin' });
    server = await register(t, 'streams');
    other = await register(t, 'other-streams');
    const repository = t.get(SsfRepository);
    const findPending = repository.findPending.bind(repository);
    jest.spyOn(repository, 'findPending').mockImplementation(async (...args) => {
      ownReads += 1;
      try {
        return await findPending(...args);
      } finally {
        ownReads -= 1;
      }
    });
  });

  afterAll(() => t.close());

  const auth = (s: Server) => basic(s.clientId, s.clientSecret);
  const create = (s: Server, body?: unknown, app = t) => {
    const request = app.http().post('/ssf/stream').set('Authorization', auth(s));
    return body === undefined ? request : request.send(body as object);
  };
  const read = (s: Server, id: string) => t.http().get(`/ssf/stream?stream_id=${id}`).set('Authorization', auth(s));
  const remove = (s: Server, id: string) =>
    t.http().delete(`/ssf/stream?stream_id=${id}`).set('Authorization', auth(s));
  const poll = (s: Server, id: string | null, body: object = { returnImmediately: true }, app = t) =>
    app
      .http()
      .post(id === null ? '/ssf/poll' : `/ssf/poll/${id}`)
      .set('Authorization', auth(s))
      .send(body);

  async function newStream(s: Server = server, app = t): Promise<string> {
    const { body } = await create(s, {}, app).expect(201);
    return body.stream_id as string;
  }

  /** The pending SETs' jtis and subjects, acknowledged nothing. */
  async function pending(s: Server, id: string | null): Promise<Array<{ jti: string; key: string; aud: unknown }>> {
    const { body } = await poll(s, id, { returnImmediately: true, maxEvents: 1000 }).expect(200);
    return Object.entries(body.sets as Record<string, string>).map(([jti, set]) => {
      const claims = decodeJwt(set);
      return { jti, key: (claims.sub_id as { id: string }).id, aud: claims.aud };
    });
  }

  async function drain(s: Server, id: string | null): Promise<void> {
    const jtis = (await pending(s, id)).map((set) => set.jti);
    if (jtis.length > 0) await poll(s, id, { returnImmediately: true, ack: jtis }).expect(200);
  }

  async function revokeKey(label: string): Promise<string> {
    const key = await t.createKey(admin, label);
    await t.http().delete(`/v1/user-api-keys/${key.id}`).set('Authorization', `Bearer ${admin.token}`).expect(200);
    return key.id;
  }

  const deliveriesOf = (streamId: string) => t.get(DataSource).getRepository(SsfDelivery).countBy({ streamId });
  const storedStream = (id: string) => t.get(DataSource).getRepository(SsfStream).findOneBy({ id });

  /**
   * `count` long polls waiting in the hub, each past its own first read: what comes next reaches them through the hub
   * (a poll enters the hub before that read, so an event committed meanwhile would be in the read).
   */
  async function waitForWaiters(count: number): Promise<void> {
    const hub = t.get(PollHub);
    await waitFor(`${count} waiting polls`, () => hub.count() >= count && ownReads === 0).catch(() => undefined);
    expect({ waiting: hub.count(), reading: ownReads }).toEqual({ waiting: count, reading: 0 });
  }

  describe('stream management (SSF 1.0)', () => {
    it('creates a stream of the caller, with its own poll endpoint, and reads it back', async () => {
      const created = await create(server, {
        delivery: { method: POLL },
        events_requested: [CREDENTIAL_CHANGE],
        description: 'orders-7f9c pid 12',
      });
      expect(created.status).toBe(201);
      expect(created.headers['cache-control']).toBe('no-store');
      expect(Number.isNaN(Date.parse(created.headers.date))).toBe(false);
      const id = created.body.stream_id as string;
      expect(id).toMatch(UUID);
      expect(created.body).toEqual({
        stream_id: id,
        iss: TEST_ISSUER,
        aud: server.audience,
        delivery: { method: POLL, endpoint_url: `${BASE}/ssf/poll/${id}` },
        events_supported: EVENTS,
        events_requested: EVENTS,
        events_delivered: EVENTS,
        description: 'orders-7f9c pid 12',
      });
      const got = await read(server, id).expect(200);
      expect(got.body).toEqual(created.body);
      expect(got.headers['cache-control']).toBe('no-store');
      // Any letter case names the same stream.
      expect((await read(server, id.toUpperCase()).expect(200)).body.stream_id).toBe(id);

      // The default stream, unchanged, without stream_id or with its own id.
      const own = await t.http().get('/ssf/stream').set('Authorization', auth(server)).expect(200);
      expect(own.body).toEqual({
        stream_id: server.clientId,
        iss: TEST_ISSUER,
        aud: server.audience,
        delivery: { method: POLL, endpoint_url: `${BASE}/ssf/poll` },
        events_supported: EVENTS,
        events_requested: EVENTS,
        events_delivered: EVENTS,
      });
      expect((await read(server, server.clientId).expect(200)).body).toEqual(own.body);
    });

    it('takes no body, an empty one, or a description of up to 200 characters', async () => {
      const bare = await create(server).expect(201);
      expect(bare.body).not.toHaveProperty('description');
      expect(bare.body.delivery.endpoint_url).toBe(`${BASE}/ssf/poll/${bare.body.stream_id}`);
      await create(server, {}).expect(201);
      const long = await create(server, { description: 'é'.repeat(200) }).expect(201);
      expect((await read(server, long.body.stream_id).expect(200)).body.description).toBe('é'.repeat(200));
    });

    it('refuses another delivery method, unknown members and malformed values with 400', async () => {
      for (const body of [
        { delivery: { method: 'urn:ietf:rfc:8935' } },
        { delivery: { method: 'https://schemas.openid.net/secevent/risc/delivery-method/push' } },
        { delivery: {} },
        { delivery: { method: POLL, endpoint_url: 'https://elsewhere.example.com' } },
        { events_requested: CREDENTIAL_CHANGE },
        { events_requested: [1] },
        { description: 'x'.repeat(201) },
        { description: 7 },
        { format: 'opaque' },
        [],
      ]) {
        const response = await create(server, body);
        expect({ body, status: response.status, error: response.body }).toEqual({
          body,
          status: 400,
          error: { code: 'INVALID_ARGUMENT', message: 'invalid request parameters', reason: 'invalid_argument' },
        });
      }
    });

    it('answers 401 with the Basic challenge without the resource server credentials', async () => {
      const id = await newStream();
      for (const response of [
        await t.http().post('/ssf/stream').send({}),
        await t.http().get(`/ssf/stream?stream_id=${id}`).set('Authorization', basic(server.clientId, 'wrong')),
        await t.http().delete(`/ssf/stream?stream_id=${id}`),
        await t.http().post(`/ssf/poll/${id}`).send({ returnImmediately: true }),
      ]) {
        expect([response.status, response.headers['www-authenticate']]).toEqual([401, 'Basic realm="gatehouse"']);
      }
    });

    it("answers 404 for another resource server's stream, an unknown one and a malformed id", async () => {
      const id = await newStream();
      for (const response of [
        await read(other, id),
        await remove(other, id),
        await poll(other, id),
        await read(server, randomUUID()),
        await remove(server, randomUUID()),
        await poll(server, randomUUID()),
        await read(server, 'not-a-stream'),
        await remove(server, 'not-a-stream'),
        await poll(server, 'not-a-stream'),
        // Another server's default stream is not the caller's either.
        await read(server, other.clientId),
      ]) {
        expect([response.status, response.body]).toEqual([404, notFound]);
      }
      // Still there for its owner.
      await read(server, id).expect(200);
    });

    it('deletes a stream with its deliveries: 204, then 404; the default stream cannot be deleted', async () => {
      const id = await newStream();
      await revokeKey('deleted stream');
      expect(await deliveriesOf(id)).toBe(1);
      const deleted = await remove(server, id);
      expect([deleted.status, deleted.text]).toEqual([204, '']);
      expect(await deliveriesOf(id)).toBe(0);
      expect(await storedStream(id)).toBeNull();
      expect([(await read(server, id)).status, (await poll(server, id)).body]).toEqual([404, notFound]);
      expect((await remove(server, id)).body).toEqual(notFound);

      expectError(
        await remove(server, server.clientId),
        400,
        'INVALID_ARGUMENT',
        'invalid request parameters',
        'invalid_argument',
      );
      expectError(
        await t.http().delete('/ssf/stream').set('Authorization', auth(server)),
        400,
        'INVALID_ARGUMENT',
        'invalid request parameters',
        'invalid_argument',
      );
      await t.http().get('/ssf/stream').set('Authorization', auth(server)).expect(200);
      await drain(server, null);
    });
  });

  describe('delivery', () => {
    it('delivers every event to every stream; acknowledging on one leaves the others pending', async () => {
      const [a, b] = [await newStream(), await newStream()];
      await drain(server, null);
      const key = await revokeKey('two instances');
      const [onA, onB, onDefault] = [await pending(server, a), await pending(server, b), await pending(server, null)];
      for (const sets of [onA, onB, onDefault]) {
        expect(sets.map((set) => [set.key, set.aud])).toEqual([[key, server.audience]]);
      }
      expect(new Set([onA[0].jti, onB[0].jti, onDefault[0].jti]).size).toBe(3);

      await poll(server, a, { returnImmediately: true, ack: [onA[0].jti] }).expect(200);
      expect(await pending(server, a)).toEqual([]);
      expect((await pending(server, b)).map((set) => set.jti)).toEqual([onB[0].jti]);
      expect((await pending(server, null)).map((set) => set.jti)).toEqual([onDefault[0].jti]);
      // A stream's jti acknowledged on another stream's endpoint is ignored there.
      await poll(server, b, { returnImmediately: true, ack: [onDefault[0].jti] }).expect(200);
      expect((await pending(server, null)).map((set) => set.jti)).toEqual([onDefault[0].jti]);
      await drain(server, b);
      await drain(server, null);
    });

    it("a stream begins with its creation; it does not receive another server's acknowledgements", async () => {
      const before = await revokeKey('before the stream');
      const id = await newStream();
      const after = await revokeKey('after the stream');
      expect((await pending(server, id)).map((set) => set.key)).toEqual([after]);
      const theirs = await newStream(other);
      expect(await pending(other, theirs)).toEqual([]);
      expect((await pending(server, null)).map((set) => set.key)).toEqual([before, after]);
      await drain(server, null);
      await drain(other, null);
    });

    it('a long poll of an instance stream answers as soon as an event is committed', async () => {
      const id = await newStream();
      const waiting = sent(poll(server, id, { maxEvents: 10 }));
      await waitForWaiters(1);
      const key = await revokeKey('long poll of an instance stream');
      const { status, body } = await waiting;
      expect(status).toBe(200);
      expect(Object.values(body.sets as Record<string, string>).map((set) => decodeJwt(set).sub_id)).toEqual([
        { format: 'opaque', id: key },
      ]);
      await drain(server, null);
    });

    it('one read for all the waiting streams per wake-up, and every waiter answered', async () => {
      const ids = await Promise.all(Array.from({ length: 20 }, () => newStream()));
      await drain(server, null);
      const read = jest.spyOn(t.get(SsfRepository), 'findPendingOf');
      try {
        const waiting = ids.map((id) => sent(poll(server, id, { maxEvents: 10 })));
        await waitForWaiters(20);
        const key = await revokeKey('one read');
        const answers = await Promise.all(waiting);
        for (const answer of answers) {
          expect(answer.status).toBe(200);
          expect(Object.values(answer.body.sets as Record<string, string>).map((set) => decodeJwt(set).sub_id)).toEqual(
            [{ format: 'opaque', id: key }],
          );
        }
        expect(read).toHaveBeenCalledTimes(1);
        expect([...read.mock.calls[0][0]].sort()).toEqual([...ids].sort());
      } finally {
        read.mockRestore();
      }
      await drain(server, null);
    });
  });

  describe('the poll', () => {
    /** `count` pending SETs of `streamId`, written without waking anyone (as a commit elsewhere not yet heard). */
    async function quietEvents(streamId: string, count: number): Promise<string[]> {
      const dataSource = t.get(DataSource);
      const at = Date.now();
      const events = Array.from({ length: count }, (_, i) =>
        Object.assign(new SsfEvent(), {
          id: randomUUID(),
          eventType: CREDENTIAL_CHANGE,
          subject: JSON.stringify({ format: 'opaque', id: randomUUID() }),
          payload: JSON.stringify({ credential_type: 'api_key', change_type: 'revoke', event_timestamp: 1 }),
          occurredAt: new Date(at + i),
        }),
      );
      const deliveries = events.map((event) =>
        Object.assign(new SsfDelivery(), {
          id: randomUUID(),
          streamId,
          eventId: event.id,
          createdAt: event.occurredAt,
          acknowledgedAt: null,
          error: null,
        }),
      );
      for (let start = 0; start < count; start += 200) {
        await dataSource.getRepository(SsfEvent).insert(events.slice(start, start + 200));
        await dataSource.getRepository(SsfDelivery).insert(deliveries.slice(start, start + 200));
      }
      return deliveries.map((delivery) => delivery.id);
    }

    it('takes 1,000 acknowledgements in one body (up to 64 KB); other routes keep the general limit', async () => {
      const id = await newStream();
      const jtis = await quietEvents(id, 1000);
      const first = await poll(server, id, { returnImmediately: true, maxEvents: 1000 }).expect(200);
      expect(Object.keys(first.body.sets).sort()).toEqual([...jtis].sort());
      const body = JSON.stringify({ returnImmediately: true, ack: jtis });
      expect(body.length).toBeGreaterThan(16 * 1024);
      const acked = await t
        .http()
        .post(`/ssf/poll/${id}`)
        .set('Authorization', auth(server))
        .set('Content-Type', 'application/json')
        .send(body)
        .expect(200);
      expect(acked.body).toEqual({ sets: {}, moreAvailable: false });
      expect(
        await t.get(DataSource).getRepository(SsfDelivery).countBy({ streamId: id, acknowledgedAt: IsNull() }),
      ).toBe(0);

      // The default stream's poll too; past 64 KB, 413.
      const defaultAcks = await poll(server, null, { returnImmediately: true, ack: jtis.map(() => randomUUID()) });
      expect(defaultAcks.status).toBe(200);
      const tooLarge = await poll(server, id, {
        returnImmediately: true,
        ack: jtis,
        setErrs: { x: { err: 'x'.repeat(30_000) } },
      });
      expectError(tooLarge, 413, 'INVALID_ARGUMENT', 'request body too large', 'body_too_large');
      const largeElsewhere = await create(server, { description: 'x'.repeat(20_000) });
      expectError(largeElsewhere, 413, 'INVALID_ARGUMENT', 'request body too large', 'body_too_large');
    });

    it('refuses a long poll past SSF_MAX_WAITING_POLLS: 429, Retry-After: 1, its acks applied', async () => {
      const id = await newStream();
      const waiting = [sent(poll(server, id, {})), sent(poll(server, id, {}))];
      await waitForWaiters(2);
      const [jti] = await quietEvents(id, 1);
      const refused = await poll(server, id, { ack: [jti] });
      expectError(
        refused,
        429,
        'RESOURCE_EXHAUSTED',
        'too many waiting polls for this stream',
        'too_many_waiting_polls',
      );
      expect(refused.headers['retry-after']).toBe('1');
      const stored = await t.get(DataSource).getRepository(SsfDelivery).findOneByOrFail({ id: jti });
      expect(stored.acknowledgedAt).not.toBeNull();
      // A poll that does not wait is not counted, nor are other streams' polls.
      expect((await poll(server, id, { returnImmediately: true }).expect(200)).body).toEqual({
        sets: {},
        moreAvailable: false,
      });
      expect((await poll(server, null, { returnImmediately: true })).status).toBe(200);
      for (const answer of await Promise.all(waiting)) {
        expect([answer.status, answer.body]).toEqual([200, { sets: {}, moreAvailable: false }]);
      }
      // Once they answered, a long poll waits again.
      expect(t.get(PollHub).count(id)).toBe(0);
    });

    it('a long poll whose client goes away leaves the hub', async () => {
      const id = await newStream();
      const abandoned = sent(poll(server, id, {}).timeout(1000)).catch((error: Error) => error);
      await waitForWaiters(1);
      expect(await abandoned).toBeInstanceOf(Error);
      await waitFor('the poll gone from the hub', () => t.get(PollHub).count(id) === 0).catch(() => undefined);
      expect(t.get(PollHub).count(id)).toBe(0);
    });

    it('records a poll of an instance stream at most once a minute', async () => {
      const id = await newStream();
      const dataSource = t.get(DataSource);
      const longAgo = new Date(Date.now() - 2 * 3600 * 1000);
      await dataSource.getRepository(SsfStream).update({ id }, { lastPolledAt: longAgo });
      await poll(server, id).expect(200);
      const polledAt = (await storedStream(id))!.lastPolledAt;
      expect(Date.now() - polledAt.getTime()).toBeLessThan(5000);
      await clockAdvance(20);
      await poll(server, id).expect(200);
      expect((await storedStream(id))!.lastPolledAt).toEqual(polledAt);
    });
  });

  describe('retention', () => {
    it('deletes streams idle for SSF_STREAM_IDLE_SECONDS, with their deliveries: their next poll is 404', async () => {
      const idle = await newStream();
      const kept = await newStream();
      await revokeKey('idle stream');
      expect(await deliveriesOf(idle)).toBe(1);
      const inHalfAnHour = new Date(Date.now() + 30 * 60 * 1000);
      await t.get(SsfRetention).prune(inHalfAnHour);
      await read(server, idle).expect(200);
      // Polled now: the other one is idle an hour from now, this one is not.
      const later = Date.now() + 61 * 60 * 1000;
      await t
        .get(DataSource)
        .getRepository(SsfStream)
        .update({ id: kept }, { lastPolledAt: new Date(later - 60_000) });
      await t.get(SsfRetention).prune(new Date(later));
      expect([(await poll(server, idle)).status, (await read(server, idle)).body]).toEqual([404, notFound]);
      expect(await deliveriesOf(idle)).toBe(0);
      await read(server, kept).expect(200);
      await drain(server, null);
    });

    it("deletes the deliveries of a removed resource server's streams", async () => {
      const leaving = await register(t, 'leaving');
      const instance = await newStream(leaving);
      await revokeKey('removed server');
      expect([await deliveriesOf(leaving.clientId), await deliveriesOf(instance)]).toEqual([1, 1]);
      await t.get(ResourceServersService).remove(leaving.audience);
      expect(await storedStream(instance)).toBeNull();
      await t.get(SsfRetention).prune();
      expect([await deliveriesOf(leaving.clientId), await deliveriesOf(instance)]).toEqual([0, 0]);
      await drain(server, null);
    });
  });

  describe('at most MAX_INSTANCE_STREAMS streams per resource server', () => {
    it('refuses one more with 429 and Retry-After, even at once; another server is not affected', async () => {
      const capped = await register(t, 'capped');
      // All but the last 20 stored directly (a thousand requests are a minute on a busy machine); then 30 at once.
      const stored = MAX_INSTANCE_STREAMS - 20;
      const now = new Date();
      const rows = Array.from({ length: stored }, () => ({
        id: randomUUID(),
        resourceServerId: capped.clientId,
        description: null,
        createdAt: now,
        lastPolledAt: now,
      }));
      for (let start = 0; start < rows.length; start += 200) {
        await t
          .get(DataSource)
          .getRepository(SsfStream)
          .insert(rows.slice(start, start + 200));
      }
      const answers = await Promise.all(Array.from({ length: 30 }, () => create(capped, {})));
      const statuses = answers.map((answer) => answer.status);
      expect(statuses.filter((status) => status === 201)).toHaveLength(MAX_INSTANCE_STREAMS - stored);
      expect(statuses.filter((status) => status === 429)).toHaveLength(
        answers.length - (MAX_INSTANCE_STREAMS - stored),
      );
      const refused = answers.find((answer) => answer.status === 429)!;
      expect(refused.body).toEqual({
        code: 'RESOURCE_EXHAUSTED',
        message: 'too many streams',
        reason: 'too_many_streams',
      });
      expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
      await create(server, {}).expect(201);

      // Deleting one makes room for one.
      const created = answers.find((answer) => answer.status === 201)!.body.stream_id as string;
      await remove(capped, created).expect(204);
      await create(capped, {}).expect(201);
      expect((await create(capped, {})).status).toBe(429);
      await t.get(ResourceServersService).remove(capped.audience);
    }, 120_000);
  });
});

describe(`the feed at shutdown and in the access log on ${DATABASE_KIND}`, () => {
  it('answers every waiting long poll at once when the drain begins, and waits no more after it', async () => {
    const t = await createTestApp({ env: { SSF_POLL_WAIT_SECONDS: '30' } });
    try {
      const audience = 'https://drained.example.com';
      const server = { ...(await t.get(ResourceServersService).register('Drained', audience)), audience };
      const authorization = basic(server.clientId, server.clientSecret);
      const stream = (await t.http().post('/ssf/stream').set('Authorization', authorization).send({}).expect(201)).body
        .stream_id as string;
      const waiting = ['/ssf/poll', `/ssf/poll/${stream}`].map((path) =>
        sent(t.http().post(path).set('Authorization', authorization).send({ maxEvents: 5 })),
      );
      const hub = t.get(PollHub);
      await waitFor('two waiting polls', () => hub.count() >= 2).catch(() => undefined);
      expect(hub.count()).toBe(2);

      const started = Date.now();
      t.get(ShutdownState).begin();
      for (const answer of await Promise.all(waiting)) {
        expect([answer.status, answer.body]).toEqual([200, { sets: {}, moreAvailable: false }]);
        expect(answer.headers.connection).toBe('close');
      }
      expect(Date.now() - started).toBeLessThan(1000);

      // A poll already past the gate when the drain began does not wait either.
      const after = Date.now();
      const answer = await t
        .get(SsfPollService)
        .poll(
          { id: server.clientId, audience },
          { maxEvents: 5, returnImmediately: false, ack: [], setErrs: [] },
          new AbortController().signal,
        );
      expect(answer).toEqual({ sets: {}, moreAvailable: false });
      expect(Date.now() - after).toBeLessThan(1000);
      expect(hub.count()).toBe(0);
    } finally {
      await t.close();
    }
  });

  it('logs answered polls at debug, and their refusals as before', async () => {
    let captured = '';
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        captured += chunk.toString('utf8');
        done();
      },
    });
    const t = await createTestApp({ env: { LOG_LEVEL: 'debug' }, logStream: sink });
    try {
      const audience = 'https://logged.example.com';
      const server = { ...(await t.get(ResourceServersService).register('Logged', audience)), audience };
      const authorization = basic(server.clientId, server.clientSecret);
      const stream = (await t.http().post('/ssf/stream').set('Authorization', authorization).send({}).expect(201)).body
        .stream_id as string;
      const calls = [
        await t.http().post('/ssf/poll').set('Authorization', authorization).send({ returnImmediately: true }),
        await t
          .http()
          .post(`/ssf/poll/${stream}`)
          .set('Authorization', authorization)
          .send({ returnImmediately: true }),
        await t.http().post('/ssf/poll').send({ returnImmediately: true }),
        await t.http().post(`/ssf/poll/${randomUUID()}`).set('Authorization', authorization).send({}),
        await t.http().get('/ssf/stream').set('Authorization', authorization),
      ];
      expect(calls.map((call) => call.status)).toEqual([200, 200, 401, 404, 200]);
      const accessLines = () =>
        captured
          .split('\n')
          .filter((line) => line !== '')
          .map((line) => JSON.parse(line) as { level: string; requestId?: string; res?: unknown; msg?: string })
          .filter((line) => line.res !== undefined);
      // Written as each response finishes, which may be after the client has read it.
      const lines = await waitFor('an access line for each call', () => {
        const written = accessLines();
        return calls.every((call) => written.some((line) => line.requestId === call.headers['x-request-id']))
          ? written
          : undefined;
      }).catch(() => accessLines());
      const levels = calls.map((call) => {
        const access = lines.filter((line) => line.requestId === call.headers['x-request-id']);
        expect(access).toHaveLength(1);
        return `${access[0].level} ${access[0].msg}`;
      });
      expect(levels).toEqual([
        'debug request completed',
        'debug request completed',
        'info request completed',
        'info request completed',
        'info request completed',
      ]);
    } finally {
      await t.close();
    }
  });
});

describe(`the instance-streams migration on ${DATABASE_KIND}`, () => {
  it('goes down (instance deliveries dropped, the rest kept) and up again', async () => {
    const t = await createTestApp();
    try {
      const audience = 'https://migrated.example.com';
      const server = { ...(await t.get(ResourceServersService).register('Migrated', audience)), audience };
      const authorization = basic(server.clientId, server.clientSecret);
      const stream = (await t.http().post('/ssf/stream').set('Authorization', authorization).send({}).expect(201)).body
        .stream_id as string;
      const admin = await t.user({ org: 'migrated' });
      const key = await t.createKey(admin, 'migrated');
      await t.http().delete(`/v1/user-api-keys/${key.id}`).set('Authorization', `Bearer ${admin.token}`).expect(200);
      const deliveries = t.get(DataSource).getRepository(SsfDelivery);
      expect([
        await deliveries.countBy({ streamId: server.clientId }),
        await deliveries.countBy({ streamId: stream }),
      ]).toEqual([1, 1]);

      const runner = t.get(DataSource).createQueryRunner();
      try {
        const migration = new SsfStreams1765200000000();
        await migration.down(runner);
        expect([
          await deliveries.countBy({ streamId: server.clientId }),
          await deliveries.countBy({ streamId: stream }),
        ]).toEqual([1, 0]);
        await migration.up(runner);
      } finally {
        await runner.release();
      }
      expect(await deliveries.countBy({ streamId: server.clientId })).toBe(1);
      const polled = await t
        .http()
        .post('/ssf/poll')
        .set('Authorization', authorization)
        .send({ returnImmediately: true });
      expect(Object.keys(polled.body.sets)).toHaveLength(1);
      await t.http().post('/ssf/stream').set('Authorization', authorization).send({}).expect(201);
    } finally {
      await t.close();
    }
  });
});
