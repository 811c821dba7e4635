import type { AddressInfo } from 'node:net';
import Express from 'express';
import request from 'supertest';
import { DataSource, In, IsNull, Like, Not } from 'typeorm';
import { JWKS_PATH } from '../../src/auth/jwks.controller';
import { TokenService } from '../../src/auth/token.service';
import { ResourceServerCredentials, ResourceServersService } from '../../src/resource-servers/resource-servers.service';
import { SsfDelivery, SsfEvent } from '../../src/ssf/ssf-event.entity';
import { gatehouse } from '../../verifier/src/express';
import { createVerifier, Verifier, VerifierOptions } from '../../verifier/src/index';
import { seedActive } from '../support/api-key-seeds';
import { HttpProxy } from '../support/http-proxy';
import { freePort } from '../support/ports';
import { msUntil, refusal } from '../support/verifier-checks';
import { TcpProxy } from '../support/tcp-proxy';
import { clockAdvance } from '../support/clock';
import { pause, waitFor } from '../support/wait';
import { createTestApp, DATABASE_KIND, TestApp, TestUser } from '../support/test-app';

/**
 * The revocation feed as a resource server's team runs it (docs/adr/0031-revocation-feed-in-production.md): the real
 * verifier (verifier/src) in this process against a listening Gatehouse (on PostgreSQL: the changes are made at one
 * instance, the verifiers follow another). Between them: a TCP proxy that cuts the network, then an HTTP proxy that
 * records every request and can fail one route (the JWKS), answer for Gatehouse or rewrite its answers:
 *
 *   verifier -> TcpProxy (the issuer's port) -> HttpProxy -> Gatehouse
 *
 * - a JWKS blip while a revocation arrives: the SET is retried (not in setErrs), the verifier is stale meanwhile;
 * - a burst of revocations while the verifier is cut off: once back it catches up, refuses every one, never accepts
 *   one on the way, and stays so;
 * - a rotation's grace: the old key's tokens are accepted during it and refused after it;
 * - pinned discovery, and clear errors when the verifier cannot start;
 * - SSF_POLL_WAIT_SECONDS=0: no busy loop.
 * What is asserted is behaviour, never how fast: the times (from each change until the verifier refuses the token, the
 * catch-up, how often the verifier was stale) are printed, and measured on a quiet machine by `npm run
 * bench:revocation` (docs/performance.md).
 */
const AUDIENCE = 'https://orders.production.example.com';
const OTHER_AUDIENCE = 'https://billing.production.example.com';
/** More than one poll's 1,000 SETs: the verifier must drain (moreAvailable) and acknowledge in chunks. */
const BURST = 1050;
/** The burst's members, each with BURST / MEMBERS keys (under the per-member cap of active keys). */
const MEMBERS = 15;
const isJwks = (r: { method: string; path: string }): boolean => r.method === 'GET' && r.path === JWKS_PATH;
const isPoll = (r: { method: string; path: string }): boolean => r.method === 'POST' && r.path.startsWith('/ssf/poll');
/**
 * The verifier's clock for its start: the `Date` of Gatehouse's answer to POST /ssf/stream (whole seconds; its start S
 * is that + 2 s, and tokens issued at or before S are confirmed by introspection, verifier/src/gatehouse.ts). Set 3 s
 * back, so that the tokens a test issues next are past S at once, as they would be 3 s later: only the feed can tell
 * the verifier about their revocations. (Nothing is revoked in those 3 s that a verifier here should know of.)
 */
const startedEarlier: typeof fetch = async (input, init) => {
  const answer = await fetch(input, init);
  const url = new URL(typeof input === 'string' ? input : input instanceof URL ? input.href : input.url);
  if (init?.method !== 'POST' || url.pathname !== '/ssf/stream' || !answer.headers.has('date')) return answer;
  const headers = new Headers(answer.headers);
  headers.set('date', new Date(Date.parse(answer.headers.get('date')!) - 3_000).toUTCString());
  return new Response(answer.body, { status: answer.status, statusText: answer.statusText, headers });
};

/** `task(0..count-1)`, at most `width` at a time, in order. */
async function inParallel<T>(count: number, width: number, task: (index: number) => Promise<T>): Promise<T[]> {
  const results = new Array<T>(count);
  let next = 0;
  const lanes = Array.from({ length: width }, async () => {
    while (next < count) {
      const index = next++;
      results[index] = await task(index);
    }
  });
  await Promise.all(lanes);
  return results;
}

interface Answer {
  status: number;
  body: Record<string, unknown>;
}

describe(`the revocation feed in production, the verifier against Gatehouse on ${DATABASE_KIND}`, () => {
  let followed: TestApp;
  let revoking: TestApp;
  /** Where the changes are made: `revoking`, directly (no proxy: cutting the verifier off does not cut them). */
  let revokingBase: string;
  let http: HttpProxy;
  let tcp: TcpProxy;
  let issuer: string;
  let orders: ResourceServerCredentials;
  let admin: TestUser;
  let verifier: Verifier;
  /** The stream ids that POST /ssf/stream answered, in order (read through the HTTP proxy). */
  const streamsCreated: string[] = [];
  const verifiers: Verifier[] = [];

  async function startVerifier(options: Partial<VerifierOptions> = {}): Promise<Verifier> {
    const started = await createVerifier({
      issuer,
      audience: AUDIENCE,
      clientId: orders.clientId,
      clientSecret: orders.clientSecret,
      fetch: startedEarlier,
      ...options,
    });
    verifiers.push(started);
    return started;
  }

  async function call(method: string, path: string, authorization: string, body?: unknown): Promise<Answer> {
    const response = await fetch(`${revokingBase}${path}`, {
      method,
      headers: { authorization, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.text();
    return { status: response.status, body: text === '' ? {} : (JSON.parse(text) as Record<string, unknown>) };
  }

  async function createKey(label: string, owner: TestUser = admin): Promise<{ id: string; value: string }> {
    const created = await call('POST', '/v1/user-api-keys', `Bearer ${owner.token}`, { label });
    expect(created.status).toBe(201);
    const body = created.body as { api_key: { id: string }; opaque_key: string };
    return { id: body.api_key.id, value: body.opaque_key };
  }

  async function mint(value: string): Promise<string> {
    const minted = await call('POST', '/v1/token', `ApiKey ${value}`, { resource: AUDIENCE });
    expect(minted.status).toBe(200);
    return (minted.body as { access_token: string }).access_token;
  }

  async function revoke(id: string, owner: TestUser = admin): Promise<void> {
    expect((await call('DELETE', `/v1/user-api-keys/${id}`, `Bearer ${owner.token}`)).status).toBe(200);
  }

  /** The deliveries (one per stream) of the events whose subject is this API key, read through the app's DataSource. */
  async function deliveriesOf(apiKeyId: string): Promise<SsfDelivery[]> {
    const dataSource = followed.get(DataSource);
    const events = await dataSource.getRepository(SsfEvent).find({ where: { subject: Like(`%${apiKeyId}%`) } });
    if (events.length === 0) return [];
    return dataSource.getRepository(SsfDelivery).find({ where: { eventId: In(events.map((event) => event.id)) } });
  }

  beforeAll(async () => {
    const gatehousePort = await freePort();
    http = new HttpProxy(gatehousePort);
    await http.start();
    // Records the stream each verifier made (its id is in POST /ssf/stream's answer), the answer unchanged.
    http.use(({ method, path }) =>
      method === 'POST' && path === '/ssf/stream'
        ? {
            rewrite: (body, status) => {
              if (status < 300) streamsCreated.push(String((JSON.parse(body) as { stream_id: unknown }).stream_id));
              return body;
            },
          }
        : undefined,
    );
    tcp = new TcpProxy('127.0.0.1', http.port);
    await tcp.start();
    issuer = `http://127.0.0.1:${tcp.port}`;
    const env = { JWT_ISSUER: issuer, PUBLIC_BASE_URL: issuer };
    followed = await createTestApp({ env });
    await followed.app.listen(gatehousePort, '127.0.0.1');
    if (DATABASE_KIND === 'postgres') {
      revoking = await createTestApp({ database: followed.database, env });
      await revoking.app.listen(0, '127.0.0.1');
      revokingBase = `http://127.0.0.1:${(revoking.app.getHttpServer().address() as AddressInfo).port}`;
    } else {
      revoking = followed;
      revokingBase = `http://127.0.0.1:${gatehousePort}`;
    }
    admin = await revoking.user({ org: 'production', role: 'admin' });
    orders = await revoking.get(ResourceServersService).register('Orders', AUDIENCE);
    verifier = await startVerifier({ maxStalenessSeconds: 2 });
    // Warm-up, past the verifier's start: a token verified with the JWKS, and its key's revocation applied. The
    // verifier then holds the signing key, and fetches the JWKS no more in this file (jose keeps it 10 minutes).
    const warm = await createKey('warm-up');
    const token = await mint(warm.value);
    expect(await refusal(verifier, token)).toBe('accepted');
    await revoke(warm.id);
    await msUntil(verifier, token, 'revoked', { limitMs: 5_000 });
    expect(http.since(0, isJwks).length).toBeGreaterThan(0);
  }, 60_000);

  afterAll(async () => {
    await Promise.allSettled(verifiers.map((started) => started.close()));
    await tcp?.close();
    await http?.close();
    if (revoking !== followed) await revoking?.close();
    await followed?.close();
  });

  it('a JWKS blip while a revocation arrives: the SET is retried, not reported in setErrs; the verifier is stale (503) meanwhile and refuses the token after', async () => {
    // To need the JWKS during the blip, the verifier must not hold the signing key yet. A replica that has just
    // started has not fetched the JWKS (jose fetches it at the first verification): no token or SET has reached
    // it yet. The test's other verifier, warmed up before, holds the key and does not fetch the JWKS. So during
    // the blip, every JWKS request that fails is the new replica trying to verify the revocation's SET.
    const mark = http.requests.length;
    const replica = await startVerifier({ maxStalenessSeconds: 1 });
    const replicaStream = streamsCreated.at(-1)!;
    const resourceServer = Express();
    resourceServer.get('/orders', gatehouse(replica), (_req, res) => {
      res.json({});
    });
    // The token, issued past the replica's start: only the feed can tell the replica about its revocation.
    const key = await createKey('jwks blip');
    const token = await mint(key.value);
    expect(await refusal(verifier, token)).toBe('accepted');
    expect(http.since(mark, isJwks)).toEqual([]);
    expect(replica.fresh).toBe(true);

    // The blip: JWKS failures, 503 until the replica is seen stale, then connections reset until one has been.
    let failing: '503' | 'drop' = '503';
    let dropMark = 0;
    const blipMark = http.requests.length;
    const stopBlip = http.use((r) =>
      isJwks(r) ? (failing === '503' ? { answer: 503, body: { code: 'UNAVAILABLE' } } : { drop: true }) : undefined,
    );
    const blipStart = performance.now();
    let revokedAt: number;
    let staleAfter: number | undefined;
    let freshAgainDuringBlip = 0;
    let staleCode = '';
    let staleStatus = 0;
    let pendingAtBlipEnd: SsfDelivery | undefined;
    try {
      revokedAt = performance.now();
      await revoke(key.id);
      const blipDeadline = blipStart + 30_000;
      for (;;) {
        if (staleAfter === undefined && !replica.fresh) {
          staleAfter = performance.now() - revokedAt;
          // What the resource server says then (verify with a stale feed needs no JWKS).
          staleCode = await refusal(replica, token);
          staleStatus = (await request(resourceServer).get('/orders').set('Authorization', `Bearer ${token}`)).status;
        } else if (staleAfter !== undefined && replica.fresh) {
          freshAgainDuringBlip += 1;
        }
        const refused = http.since(blipMark, isJwks).filter((r) => r.status === 503).length;
        if (failing === '503' && staleAfter !== undefined && refused > 0) {
          failing = 'drop';
          dropMark = http.requests.length;
        } else if (failing === 'drop' && http.since(dropMark, isJwks).length > 0) {
          break;
        }
        if (performance.now() > blipDeadline) {
          throw new Error(`the blip did not end: stale ${String(staleAfter)}, JWKS refused ${refused}, ${failing}`);
        }
        await pause(10); // the pace of the watch (each round reads the replica's freshness)
      }
      pendingAtBlipEnd = (await deliveriesOf(key.id)).find((delivery) => delivery.streamId === replicaStream);
    } finally {
      stopBlip();
    }
    const blipEnd = performance.now();
    const refusedAfterBlip = await msUntil(replica, token, 'revoked', { limitMs: 15_000, never: 'accepted' });
    const revokeToRefused = performance.now() - revokedAt;
    console.log(
      `JWKS blip (${DATABASE_KIND}): stale ${staleAfter?.toFixed(0)} ms after the revocation; refused ` +
        `${refusedAfterBlip.toFixed(0)} ms after the blip's end, ${revokeToRefused.toFixed(0)} ms after the revocation ` +
        `(the blip lasted ${(blipEnd - blipStart).toFixed(0)} ms)`,
    );

    // The replica needed the JWKS during the blip, and was refused it.
    expect(http.since(blipMark, isJwks).filter((r) => r.status !== 200).length).toBeGreaterThan(0);
    // It was not fresh while it could not apply the SET: 503 feed_stale, not the token accepted.
    expect(staleAfter).toBeDefined();
    expect({ staleCode, staleStatus, freshAgainDuringBlip }).toEqual({
      staleCode: 'feed_stale',
      staleStatus: 503,
      freshAgainDuringBlip: 0,
    });
    // At Gatehouse: the SET was neither acknowledged nor reported in setErrs while it could not be applied ...
    expect(pendingAtBlipEnd).toMatchObject({ acknowledgedAt: null, error: null });
    // ... and after the blip it was applied and acknowledged, with no error recorded at any stream.
    await waitFor(
      "the replica's acknowledgement",
      async () =>
        (await deliveriesOf(key.id)).find((delivery) => delivery.streamId === replicaStream)?.acknowledgedAt != null,
      { timeoutMs: 20_000, everyMs: 50 },
    );
    const deliveries = await deliveriesOf(key.id);
    expect(deliveries.length).toBeGreaterThan(0);
    expect(deliveries.filter((delivery) => delivery.error !== null)).toEqual([]);
    await replica.close();
  }, 60_000);

  it(`${BURST} revocations while the verifier is cut off: once back it catches up, is fresh, refuses every one (none accepted on the way), and keeps refusing`, async () => {
    const members: TestUser[] = [];
    for (let m = 0; m < MEMBERS; m += 1) members.push(await revoking.user({ org: 'production', role: 'member' }));
    const ownerOf = (i: number): TestUser => members[i % MEMBERS];
    const madeStart = performance.now();
    // Written straight into the database: their creation is not what this tests (1,050 over HTTP were half a minute).
    const keys = await seedActive(revoking, members, BURST);
    // Signed by Gatehouse as an exchange signs them (a thousand exchanges more are half a minute on a busy machine).
    const tokens = await inParallel(BURST, 8, (i) =>
      revoking.get(TokenService).mint({
        userId: ownerOf(i).userId,
        organizationId: ownerOf(i).organizationId,
        credentialId: keys[i],
        tokenUse: 'access',
        scope: 'api_keys:read',
        lifetimeSeconds: 3600,
        audience: AUDIENCE,
      }),
    );
    const made = performance.now() - madeStart;
    const before = await Promise.all(tokens.map((token) => refusal(verifier, token)));
    expect(before.filter((answer) => answer !== 'accepted')).toEqual([]);

    const mark = http.requests.length;
    let revokeMs: number;
    tcp.blackhole();
    try {
      await msUntil(verifier, tokens[0], 'feed_stale', { limitMs: 20_000 });
      const start = performance.now();
      await inParallel(BURST, 8, (i) => revoke(keys[i], ownerOf(i)));
      revokeMs = performance.now() - start;
    } finally {
      await tcp.restore();
    }

    // Back: until fresh and every token refused; a revoked key's token accepted on the way is a failure.
    const back = performance.now();
    let acceptedOnTheWay = 0;
    let answers: string[];
    for (;;) {
      answers = await Promise.all(tokens.map((token) => refusal(verifier, token)));
      acceptedOnTheWay += answers.filter((answer) => answer === 'accepted').length;
      if (verifier.fresh && answers.every((answer) => answer === 'revoked')) break;
      if (performance.now() - back > 60_000) break;
      await pause(50); // the pace of the watch: every token asked each round
    }
    const caughtUp = performance.now() - back;
    console.log(
      `burst (${DATABASE_KIND}): ${BURST} keys and tokens made in ${(made / 1000).toFixed(1)} s, revoked in ` +
        `${(revokeMs / 1000).toFixed(1)} s while cut off; fresh and refusing all ${caughtUp.toFixed(0)} ms after ` +
        `the network came back`,
    );
    expect(acceptedOnTheWay).toBe(0);
    expect(answers.filter((answer) => answer !== 'revoked').length).toBe(0);
    expect(verifier.fresh).toBe(true);

    // And it stays so, watched for 5 s: the revoked key's token is never accepted, and the verifier is fresh again at the
    // end.
    // Whether it also stays fresh at every check depends on its heartbeat getting the CPU within maxStalenessSeconds
    // (2 s here), which a busy machine does not promise: how many checks found it stale is a figure, printed.
    const stayed = performance.now();
    let staleChecks = 0;
    let checks = 0;
    const answersMeanwhile = new Set<string>();
    while (performance.now() - stayed < 5_000) {
      const answer = await refusal(verifier, tokens[BURST - 1]);
      answersMeanwhile.add(answer);
      checks += 1;
      if (!verifier.fresh || answer !== 'revoked') staleChecks += 1;
      await pause(100); // the pace of the watch
    }
    console.log(`burst (${DATABASE_KIND}): stale at ${staleChecks} of ${checks} checks in the 5 s after catching up`);
    expect([...answersMeanwhile].filter((answer) => answer !== 'revoked' && answer !== 'feed_stale')).toEqual([]);
    await msUntil(verifier, tokens[BURST - 1], 'revoked', { limitMs: 10_000 });
    // No poll was refused for its size (413) or its acknowledgements (400), though one carried 1,000
    // acknowledgements: more than the 16 KB that polls were allowed before ADR 0031.
    const polls = http.since(mark, isPoll);
    expect(polls.filter((r) => r.status === 413 || r.status === 400).map((r) => r.status)).toEqual([]);
    expect(Math.max(...polls.map((r) => r.bytes ?? 0))).toBeGreaterThan(16 * 1024);
    // At Gatehouse: the verifier's stream has nothing left to deliver, and no SET was reported in setErrs.
    const deliveries = followed.get(DataSource).getRepository(SsfDelivery);
    const stream = streamsCreated[0];
    await waitFor(
      "the verifier's backlog at Gatehouse emptied",
      async () => (await deliveries.count({ where: { streamId: stream, acknowledgedAt: IsNull() } })) === 0,
      { timeoutMs: 20_000, everyMs: 50 },
    );
    expect(await deliveries.count({ where: { streamId: stream, error: Not(IsNull()) } })).toBe(0);
  }, 150_000);

  it("rotation grace: a token minted before the rotation is accepted during the grace and refused after it (once a second past its end, the verifier's own clock decides); the new key passes", async () => {
    const GRACE_SECONDS = 4;
    const key = await createKey('rotated');
    const before = await mint(key.value);
    expect(await refusal(verifier, before)).toBe('accepted');
    const rotated = await call('POST', `/v1/user-api-keys/${key.id}/rotate`, `Bearer ${admin.token}`, {
      grace_period_seconds: GRACE_SECONDS,
    });
    expect(rotated.status).toBe(201);
    const body = rotated.body as { opaque_key: string; previous_api_key: { expires_at: string } };
    const graceEnd = Date.parse(body.previous_api_key.expires_at);
    expect(graceEnd - Date.now()).toBeGreaterThan((GRACE_SECONDS - 1) * 1000);
    const after = await mint(body.opaque_key);
    expect(await refusal(verifier, after)).toBe('accepted');

    // During the grace (up to a second before its end: the event gives the end in whole seconds): each answer that came
    // back before then.
    const during = new Set<string>();
    while (Date.now() < graceEnd - 1000) {
      const answer = await refusal(verifier, before);
      if (Date.now() < graceEnd - 1000) during.add(answer);
      await pause(20); // the pace of the watch
    }
    expect([...during]).toEqual(['accepted']);

    // Then refused as revoked: the verifier holds the key's end (in whole seconds, from the rotation's event) and compares
    // it with its own clock, so any verification a second past the end refuses it, however late it runs.
    await msUntil(verifier, before, 'revoked', { limitMs: 15_000 });
    const lag = Date.now() - graceEnd;
    console.log(`rotation grace (${DATABASE_KIND}): the old key's token refused ${lag} ms after the grace's end`);
    await clockAdvance(Math.max(0, graceEnd + 1000 - Date.now()));
    expect(await refusal(verifier, before)).toBe('revoked');
    expect(await refusal(verifier, after)).toBe('accepted');
  }, 30_000);

  describe('pinned discovery, and clear errors at start', () => {
    /** Serves Gatehouse's discovery rewritten to its own origin (and doctored), proxying everything else. */
    let doctoring: HttpProxy;
    /** Another origin, which records what reaches it (and would forward it to Gatehouse). */
    let other: HttpProxy;
    let doctor: { path: string; change: (document: Record<string, unknown>) => void } | undefined;

    beforeAll(async () => {
      const port = (followed.app.getHttpServer().address() as AddressInfo).port;
      doctoring = new HttpProxy(port);
      other = new HttpProxy(port);
      await Promise.all([doctoring.start(), other.start()]);
      doctoring.use(({ path }) =>
        ['/.well-known/oauth-authorization-server', '/.well-known/ssf-configuration', '/ssf/stream'].includes(path)
          ? {
              rewrite: (body, status) => {
                if (status >= 300 || body === '') return body;
                const document = JSON.parse(body.replaceAll(issuer, doctoring.origin)) as Record<string, unknown>;
                if (doctor?.path === path) doctor.change(document);
                return JSON.stringify(document);
              },
            }
          : undefined,
      );
    });

    afterAll(async () => {
      await doctoring?.close();
      await other?.close();
    });

    /** createVerifier's rejection (bounded in time); a verifier it made after all fails the test (closed in afterAll). */
    async function creationError(options: Partial<VerifierOptions>): Promise<Error> {
      let timer: NodeJS.Timeout | undefined;
      const outcome = await Promise.race([
        createVerifier({
          issuer: doctoring.origin,
          audience: AUDIENCE,
          clientId: orders.clientId,
          clientSecret: orders.clientSecret,
          ...options,
        }).then(
          (made) => {
            verifiers.push(made);
            return made;
          },
          (error: unknown) => (error instanceof Error ? error : new Error(String(error))),
        ),
        new Promise<Error>((resolve) => {
          timer = setTimeout(() => resolve(new Error('createVerifier neither resolved nor rejected in 15 s')), 15_000);
        }),
      ]);
      clearTimeout(timer);
      if (!(outcome instanceof Error)) throw new Error('createVerifier accepted what it should have refused');
      if (outcome.message.startsWith('createVerifier neither')) throw outcome;
      return outcome;
    }

    it('the rewriting proxy itself is sound: undoctored, a verifier starts through it', async () => {
      doctor = undefined;
      const mark = doctoring.requests.length;
      const started = await createVerifier({
        issuer: doctoring.origin,
        audience: AUDIENCE,
        clientId: orders.clientId,
        clientSecret: orders.clientSecret,
      });
      verifiers.push(started);
      expect(started.fresh).toBe(true);
      expect(doctoring.since(mark, isPoll).length).toBeGreaterThan(0);
      await started.close();
    }, 20_000);

    const cases: Array<[string, string, (document: Record<string, unknown>, elsewhere: string) => void]> = [
      ["the metadata's issuer", '/.well-known/oauth-authorization-server', (d, o) => (d.issuer = o)],
      [
        "the metadata's jwks_uri",
        '/.well-known/oauth-authorization-server',
        (d, o) => (d.jwks_uri = `${o}${JWKS_PATH}`),
      ],
      [
        "the metadata's introspection_endpoint",
        '/.well-known/oauth-authorization-server',
        (d, o) => (d.introspection_endpoint = `${o}/oauth/introspect`),
      ],
      ["the SSF configuration's issuer", '/.well-known/ssf-configuration', (d, o) => (d.issuer = o)],
      [
        "the SSF configuration's jwks_uri",
        '/.well-known/ssf-configuration',
        (d, o) => (d.jwks_uri = `${o}${JWKS_PATH}`),
      ],
      [
        "the SSF configuration's configuration_endpoint",
        '/.well-known/ssf-configuration',
        (d, o) => (d.configuration_endpoint = `${o}/ssf/stream`),
      ],
      [
        "the stream's delivery endpoint_url",
        '/ssf/stream',
        (d, o) => {
          const delivery = d.delivery as { endpoint_url: string };
          const endpoint = new URL(delivery.endpoint_url);
          delivery.endpoint_url = `${o}${endpoint.pathname}${endpoint.search}`;
        },
      ],
    ];

    it.each(cases)(
      'refuses %s on another origin, naming it, and sends no credential there',
      async (_what, path, change) => {
        doctor = { path, change: (document) => change(document, other.origin) };
        const mark = other.requests.length;
        try {
          const error = await creationError({});
          expect(error.message).toContain(other.origin);
        } finally {
          doctor = undefined;
        }
        expect(other.since(mark, (r) => r.authorization !== undefined)).toEqual([]);
      },
      30_000,
    );

    it('an unreachable issuer fails, naming it', async () => {
      const nobody = `http://127.0.0.1:${await freePort()}`;
      const error = await creationError({ issuer: nobody });
      expect(error.message).toContain(nobody.slice('http://'.length));
    }, 20_000);

    it("another resource server's credentials, or an audience nobody registered, fail naming the audience", async () => {
      const billing = await revoking.get(ResourceServersService).register('Billing', OTHER_AUDIENCE);
      const foreign = await creationError({
        clientId: billing.clientId,
        clientSecret: billing.clientSecret,
      });
      expect(foreign.message).toMatch(/audience/i);
      expect([AUDIENCE, OTHER_AUDIENCE].some((audience) => foreign.message.includes(audience))).toBe(true);
      const unknown = 'https://nobody.production.example.com';
      const unregistered = await creationError({ audience: unknown });
      expect(unregistered.message).toMatch(/audience/i);
      expect([unknown, AUDIENCE].some((audience) => unregistered.message.includes(audience))).toBe(true);
    }, 30_000);

    it('a bad client secret fails, naming the URL and the refusal', async () => {
      const error = await creationError({ clientSecret: `${orders.clientSecret.slice(0, -2)}xx` });
      expect(error.message).toContain(doctoring.origin);
      expect(error.message).toMatch(/401|invalid_client|credential|secret|unauthori[sz]ed/i);
    }, 20_000);
  });

  it('SSF_POLL_WAIT_SECONDS=0: the verifier does not busy-poll, and still applies a revocation', async () => {
    const port = await freePort();
    const proxy = new HttpProxy(port);
    let quick: TestApp | undefined;
    let started: Verifier | undefined;
    try {
      await proxy.start();
      quick = await createTestApp({
        env: { SSF_POLL_WAIT_SECONDS: '0', JWT_ISSUER: proxy.origin, PUBLIC_BASE_URL: proxy.origin },
      });
      await quick.app.listen(port, '127.0.0.1');
      const server = await quick.get(ResourceServersService).register('Quick', AUDIENCE);
      const member = await quick.user({ org: 'quick', role: 'admin' });
      started = await createVerifier({
        issuer: proxy.origin,
        audience: AUDIENCE,
        clientId: server.clientId,
        clientSecret: server.clientSecret,
        fetch: startedEarlier,
      });
      // Gatehouse answers every long poll at once: the verifier paces them (one a second at most, and its heartbeat
      // every 3.3 s). Counted over 2 s: a busy loop would make hundreds.
      const mark = proxy.requests.length;
      await pause(2_000); // the window the polls are counted in
      const polls = proxy.since(mark, isPoll).length;
      console.log(`SSF_POLL_WAIT_SECONDS=0 (${DATABASE_KIND}): ${polls} polls in 2 s`);
      expect(polls).toBeLessThan(10);
      expect(started.fresh).toBe(true);

      // Still a feed: a revocation (of a token issued past the verifier's start) reaches it.
      const key = await quick.createKey(member, 'quick');
      const token = await quick.exchange(key.value, { resource: AUDIENCE });
      expect(await refusal(started, token)).toBe('accepted');
      const revokedAt = performance.now();
      await quick
        .http()
        .delete(`/v1/user-api-keys/${key.id}`)
        .set('Authorization', `Bearer ${member.token}`)
        .expect(200);
      await msUntil(started, token, 'revoked', { limitMs: 11_000 });
      console.log(
        `SSF_POLL_WAIT_SECONDS=0 (${DATABASE_KIND}): revoke -> refused in ${(performance.now() - revokedAt).toFixed(0)} ms`,
      );
    } finally {
      await started?.close();
      await proxy.close();
      await quick?.close();
    }
  }, 60_000);
});
