import { DataSource } from 'typeorm';
import { MembersService } from '../../src/members/members.service';
import { TokenService } from '../../src/auth/token.service';
import { ResourceServersService } from '../../src/resource-servers/resource-servers.service';
import { SsfRetention } from '../../src/ssf/ssf-retention';
import { freePort } from '../support/ports';
import { percentile } from '../support/verifier-checks';
import { CheckResult, outcome, ResourceServerOptions, ResourceServerProcess } from '../support/resource-server-process';
import { TcpProxy } from '../support/tcp-proxy';
import { createTestApp, DATABASE_KIND, TestApp, TestUser } from '../support/test-app';
import { pause, waitFor } from '../support/wait';

/**
 * Resource servers as their teams run them (docs/adr/0031-revocation-feed-in-production.md): each one a process of
 * its own using the verifier (test/support/resource-server.worker.ts), asked over HTTP, so what is asserted is what
 * its clients see (status and code). A process is killed with SIGKILL (a crash) and started again; replicas share
 * one resource server's credentials; one replica reaches Gatehouse through a TcpProxy that cuts it off. On
 * PostgreSQL every change is made at one Gatehouse instance and the resource servers follow another on the same
 * database; on SQLite there is one instance. What is asserted is what the clients see and in which order; how soon
 * (each change refused within a second) is printed, and measured on a quiet machine by `npm run bench:revocation`.
 */

const ORGANIZATION = 'resource-servers';
const MAX_STALENESS_SECONDS = 2;
/** The keys' scopes, in catalogue order (as the token's `scope` claim lists them). */
const KEY_SCOPES = ['api_keys:create', 'api_keys:read'];
/** What every check requires: a scope a demotion to viewer takes away, so a narrowed token is refused too. */
const REQUIRED = ['api_keys:create'];
/** What a viewer still may do. */
const VIEWER_SCOPES = ['api_keys:read'];

/** What changes what a token may do: a revocation by its cause, or a member's demotion (admin to viewer). */
type Change = 'owner' | 'admin' | 'exposed report' | 'member removal' | 'role change';
const CHANGES: Change[] = ['owner', 'admin', 'exposed report', 'member removal', 'role change'];
/** What a resource server that knows the change answers a request requiring REQUIRED. */
const refusedAs = (change: Change): string => (change === 'role change' ? '403 insufficient_scope' : '401 revoked');
/**
 * The first refusals a client may see as the change arrives: a member removal is two events of one transaction (the
 * key revoked, and the member's scope emptied), applied in either order.
 */
const firstRefusals = (change: Change): string[] =>
  change === 'member removal' ? ['401 revoked', '403 insufficient_scope'] : [refusedAs(change)];

/** A token of a key of its own holder, and the change to come. */
interface Subject {
  change: Change;
  holder: TestUser;
  key: { id: string; value: string };
  token: string;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** An id to write into SQL as it is (checked: the same text on both databases, no placeholder dialects). */
const uuid = (id: string): string => {
  if (!UUID.test(id)) throw new Error(`not a UUID: ${id}`);
  return id;
};

describe(`resource servers in processes of their own: restarts and replicas on ${DATABASE_KIND}`, () => {
  /** The Gatehouse the resource servers follow (listening on `gatehousePort`). */
  let followed: TestApp;
  /** Where every change is made: another instance on the same database on PostgreSQL, else the same one. */
  let revoking: TestApp;
  let gatehousePort: number;
  let issuer: string;
  let admin: TestUser;

  beforeAll(async () => {
    gatehousePort = await freePort();
    issuer = `http://127.0.0.1:${gatehousePort}`;
    const env = { JWT_ISSUER: issuer, PUBLIC_BASE_URL: issuer, EXPOSED_REPORT_MIN_RESPONSE_MS: '0' };
    followed = await createTestApp({ env });
    await followed.app.listen(gatehousePort, '127.0.0.1');
    revoking = DATABASE_KIND === 'postgres' ? await createTestApp({ database: followed.database, env }) : followed;
    admin = await revoking.user({ org: ORGANIZATION, role: 'admin' });
  }, 60_000);

  afterEach(async () => {
    await ResourceServerProcess.killAll();
  });

  afterAll(async () => {
    await ResourceServerProcess.killAll();
    if (revoking !== followed) await revoking?.close();
    await followed?.close();
  });

  /** A resource server registered at Gatehouse, as the options of the processes that run it. */
  async function register(name: string): Promise<ResourceServerOptions> {
    const audience = `https://${name}.example.com`;
    const { clientId, clientSecret } = await revoking.get(ResourceServersService).register(name, audience);
    return { issuer, audience, clientId, clientSecret, maxStalenessSeconds: MAX_STALENESS_SECONDS };
  }

  /** A holder of its own (an admin to be demoted, else a member), a key with KEY_SCOPES and a token for `audience`. */
  async function subject(change: Change, audience: string, label: string): Promise<Subject> {
    const holder = await revoking.user({ org: ORGANIZATION, role: change === 'role change' ? 'admin' : 'member' });
    const key = await revoking.createKey(holder, label, { scopes: KEY_SCOPES });
    const token = await revoking.exchange(key.value, { resource: audience });
    return { change, holder, key, token };
  }

  /** Makes the change at the revoking instance, through the API where there is a route for it. */
  async function apply({ change, holder, key }: Subject): Promise<void> {
    const http = revoking.http();
    switch (change) {
      case 'owner':
        await http.delete(`/v1/user-api-keys/${key.id}`).set('Authorization', `Bearer ${holder.token}`).expect(200);
        return;
      case 'admin':
        await http
          .delete(`/v1/organization/api-keys/${key.id}`)
          .set('Authorization', `Bearer ${admin.token}`)
          .expect(200);
        return;
      case 'exposed report':
        await http
          .post('/v1/api-keys/exposed')
          .send({ keys: [key.value] })
          .expect(202);
        return;
      case 'member removal':
        await revoking.get(MembersService).remove(holder.organizationId, holder.userId);
        return;
      case 'role change':
        await revoking.get(MembersService).setRole(holder.organizationId, holder.userId, 'viewer');
        return;
    }
  }

  /** What `server` answers `subject`'s token, with enough said to read a failure. */
  async function answer(server: ResourceServerProcess, { change, token }: Subject, scopes = REQUIRED) {
    return { server: server.name, change, outcome: outcome(await server.check(token, scopes)) };
  }

  /** The change is applied: refused, or (a demoted member) narrowed to what a viewer may do. */
  async function expectApplied(server: ResourceServerProcess, changed: Subject): Promise<void> {
    expect(await answer(server, changed)).toEqual({
      server: server.name,
      change: changed.change,
      outcome: refusedAs(changed.change),
    });
    if (changed.change === 'role change') {
      const narrowed = await server.check(changed.token, VIEWER_SCOPES);
      expect({ status: narrowed.status, scopes: narrowed.access?.scopes }).toEqual({
        status: 200,
        scopes: VIEWER_SCOPES,
      });
    }
  }

  /** The token passes with who it is and all its key's scopes. */
  async function expectAccepted(server: ResourceServerProcess, valid: Subject): Promise<void> {
    const result: CheckResult = await server.check(valid.token, REQUIRED);
    expect({ server: server.name, status: result.status, access: result.access }).toEqual({
      server: server.name,
      status: 200,
      access: {
        userId: valid.holder.userId,
        organizationId: valid.holder.organizationId,
        credentialId: valid.key.id,
        // Deprecated, the same value (docs/revocation-feed.md).
        apiKeyId: valid.key.id,
        scopes: KEY_SCOPES,
      },
    });
  }

  /** Ids of the resource server's instance streams (ADR 0031), as Gatehouse stores them. */
  async function instanceStreams(clientId: string): Promise<string[]> {
    const rows: Array<{ id: string }> = await followed
      .get(DataSource)
      .query(`SELECT id FROM ssf_streams WHERE resource_server_id = '${uuid(clientId)}' ORDER BY id`);
    return rows.map((row) => row.id);
  }

  describe('a resource server restarted', () => {
    it('started for the first time after keys were revoked and a member demoted: refuses and narrows from its first request', async () => {
      const options = await register('first-start');
      const changed: Subject[] = [];
      for (const change of CHANGES) {
        const made = await subject(change, options.audience, `before the first start: ${change}`);
        await apply(made);
        changed.push(made);
      }
      const valid = await subject('owner', options.audience, 'still valid');

      const server = await ResourceServerProcess.start('first start', options);
      // Each token's first request: no waiting for the feed.
      for (const made of changed) await expectApplied(server, made);
      await expectAccepted(server, valid);
    }, 30_000);

    it('killed (SIGKILL) and started again: refuses the keys revoked and narrows the member demoted while it was down; a valid key passes', async () => {
      const options = await register('crashed');
      const first = await ResourceServerProcess.start('before the crash', options);
      const changed: Subject[] = [];
      for (const change of CHANGES) changed.push(await subject(change, options.audience, `while down: ${change}`));
      const valid = await subject('owner', options.audience, 'still valid');
      for (const made of [...changed, valid]) {
        expect(await answer(first, made)).toEqual({ server: first.name, change: made.change, outcome: '200' });
      }

      await first.kill();
      for (const made of changed) await apply(made);
      const second = await ResourceServerProcess.start('after the crash', options);
      for (const made of changed) await expectApplied(second, made);
      await expectAccepted(second, valid);

      // The token of the valid key predates this process; its key revoked now comes through the feed.
      const revokedAt = performance.now();
      await apply(valid);
      await second.until(valid.token, '401 revoked', { scopes: REQUIRED });
      const refusedMs = performance.now() - revokedAt;

      // Another crash: the third process knows it all again, at once.
      const third = await second.restart();
      for (const made of [...changed, valid]) await expectApplied(third, made);
      console.log(
        `restarted resource server (${DATABASE_KIND}): verifier started in ${second.startMs.toFixed(0)} ms, then ${third.startMs.toFixed(0)} ms; a revocation after the restart refused in ${refusedMs.toFixed(0)} ms`,
      );
    }, 30_000);

    it("keeps refusing the token of a key revoked before it started for the token's whole life, across another crash", async () => {
      const options = await register('whole-life');
      const holder = await revoking.user({ org: ORGANIZATION, role: 'member' });
      const revokedKey = await revoking.createKey(holder, 'short-lived, revoked', { scopes: KEY_SCOPES });
      const validKey = await revoking.createKey(holder, 'short-lived, valid', { scopes: KEY_SCOPES });
      // Signed by Gatehouse as an exchange signs them, with a life short enough to watch whole (an exchange gives 60 s
      // at least).
      const lifetimeSeconds = 6;
      const mint = (credentialId: string) =>
        revoking.get(TokenService).mint({
          userId: holder.userId,
          organizationId: holder.organizationId,
          credentialId,
          tokenUse: 'access',
          scope: KEY_SCOPES.join(' '),
          lifetimeSeconds,
          audience: options.audience,
        });
      const [revokedToken, validToken] = await Promise.all([mint(revokedKey.id), mint(validKey.id)]);
      const expiresAt =
        (JSON.parse(Buffer.from(validToken.split('.')[1], 'base64url').toString()).exp as number) * 1000;
      await revoking
        .http()
        .delete(`/v1/user-api-keys/${revokedKey.id}`)
        .set('Authorization', `Bearer ${holder.token}`)
        .expect(200);

      let server = await ResourceServerProcess.start('whole life', options);
      const samples: Array<{ atMs: number; revoked: string; valid: string }> = [];
      const crashAt = expiresAt - (lifetimeSeconds * 1000) / 3;
      let crashed = false;
      while (Date.now() < expiresAt + 1_000) {
        if (!crashed && Date.now() > crashAt) {
          crashed = true;
          await server.kill();
          server = await ResourceServerProcess.start('whole life, after a crash', options);
        }
        const [revoked, valid] = await Promise.all([server.check(revokedToken), server.check(validToken)]);
        samples.push({ atMs: Date.now() - expiresAt, revoked: outcome(revoked), valid: outcome(valid) });
        await pause(100);
      }

      // 100 ms either side of `exp` is left out: the second it ends in is the resource server's to round.
      const alive = samples.filter(({ atMs }) => atMs < -100);
      const expired = samples.filter(({ atMs }) => atMs > 100);
      expect(alive.length).toBeGreaterThan(15);
      expect(expired.length).toBeGreaterThan(3);
      expect(alive.filter(({ revoked, valid }) => revoked !== '401 revoked' || valid !== '200')).toEqual([]);
      expect(
        expired.filter(({ revoked, valid }) => !revoked.startsWith('401 ') || valid !== '401 invalid_token'),
      ).toEqual([]);
    }, 30_000);
  });

  describe('replicas of one resource server (the same credentials)', () => {
    const ROUNDS = 3;

    it(`every change, whatever its cause, applied by each of three replicas: accepted until then, refused after (${ROUNDS} per cause)`, async () => {
      const options = await register('replicated');
      const replicas = await Promise.all(
        ['A', 'B', 'C'].map((name) => ResourceServerProcess.start(`replica ${name}`, options)),
      );
      const figures: Array<{ change: Change; late: string[] }> = [];
      for (const change of CHANGES) {
        const latencies: number[] = [];
        const late: string[] = [];
        for (let round = 0; round < ROUNDS; round += 1) {
          const made = await subject(change, options.audience, `replicated ${change} ${round}`);
          for (const replica of replicas) {
            expect(await answer(replica, made)).toEqual({ server: replica.name, change, outcome: '200' });
          }
          // Each replica asked every 5 ms from the moment the change is requested: a member removal answers only
          // in the second after its commit (a new membership's sessions must start in a later second).
          await Promise.all([
            apply(made),
            ...replicas.map(async (replica) => {
              const { ms, seen } = await replica.until(made.token, firstRefusals(change), { scopes: REQUIRED });
              latencies.push(ms);
              // What its clients saw meanwhile: accepted, then refused; never anything else (a stale feed).
              if (seen.slice(0, -1).some((seenOutcome) => seenOutcome !== '200')) {
                late.push(`${replica.name}, round ${round}: ${seen.join(' -> ')}`);
              }
              // And then refused as the change says (after a removal: the key revoked).
              await replica.until(made.token, refusedAs(change), { scopes: REQUIRED });
            }),
          ]);
        }
        const [p50, p99, max] = [percentile(latencies, 50), percentile(latencies, 99), Math.max(...latencies)];
        figures.push({ change, late });
        console.log(
          `${change} -> refused by each of 3 replicas (${DATABASE_KIND}, ${latencies.length} answers): p50 ${p50.toFixed(0)} ms, p99 ${p99.toFixed(0)} ms, max ${max.toFixed(0)} ms`,
        );
      }
      for (const { change, late } of figures) expect({ change, late }).toEqual({ change, late: [] });
    }, 60_000);

    it('a replica cut off for 3 s fails closed meanwhile, and once back refuses the key revoked during the cut, which the others had acknowledged', async () => {
      const options = await register('partitioned');
      const proxy = new TcpProxy('127.0.0.1', gatehousePort);
      await proxy.start();
      try {
        const [a, b, cut] = await Promise.all([
          ResourceServerProcess.start('replica A', options),
          ResourceServerProcess.start('replica B', options),
          ResourceServerProcess.start('replica C (cut off)', { ...options, via: `127.0.0.1:${proxy.port}` }),
        ]);
        const kept = await subject('owner', options.audience, 'kept');
        const revoked = await subject('owner', options.audience, 'revoked during the cut');
        for (const replica of [a, b, cut]) {
          for (const made of [kept, revoked]) {
            expect(await answer(replica, made)).toEqual({ server: replica.name, change: made.change, outcome: '200' });
          }
        }

        proxy.blackhole();
        const cutAt = performance.now();
        const stale = await cut.until(kept.token, '503 feed_stale', { scopes: REQUIRED });
        const staleAnswer = await cut.check(kept.token, REQUIRED);
        expect({ status: staleAnswer.status, retryAfter: staleAnswer.headers['retry-after'] }).toEqual({
          status: 503,
          retryAfter: '1',
        });
        for (const replica of [a, b]) {
          expect(await answer(replica, kept)).toEqual({ server: replica.name, change: 'owner', outcome: '200' });
        }

        const revokedAt = performance.now();
        await apply(revoked);
        const others = await Promise.all(
          [a, b].map((replica) => replica.until(revoked.token, '401 revoked', { scopes: REQUIRED })),
        );
        const othersMs = performance.now() - revokedAt;
        // Both others acknowledged their own delivery of the event; the cut-off one's is still pending.
        const deliveries = async () => {
          const rows: Array<{ stream_id: string; acknowledged: number | boolean }> = await followed
            .get(DataSource)
            .query(
              `SELECT d.stream_id, CASE WHEN d.acknowledged_at IS NULL THEN 0 ELSE 1 END AS acknowledged
                 FROM ssf_deliveries d JOIN ssf_events e ON e.id = d.event_id
                WHERE e.subject LIKE '%${uuid(revoked.key.id)}%'
                  AND d.stream_id IN (SELECT id FROM ssf_streams WHERE resource_server_id = '${uuid(options.clientId)}')`,
            );
          return rows.map((row) => Number(row.acknowledged)).sort();
        };
        let acknowledged = await deliveries();
        await waitFor(
          'the deliveries acknowledged',
          async () => (acknowledged = await deliveries()).join() === '0,1,1',
        ).catch(() => undefined);
        expect(acknowledged).toEqual([0, 1, 1]);

        // Fails closed for every token until the cut has lasted 3 s: the revoked one and the kept one alike.
        const meanwhile = new Set<string>();
        do {
          for (const made of [kept, revoked]) meanwhile.add(outcome(await cut.check(made.token, REQUIRED)));
          await pause(50);
        } while (performance.now() - cutAt < 3_000);
        expect([...meanwhile]).toEqual(['503 feed_stale']);

        await proxy.restore();
        const back = await cut.until(revoked.token, '401 revoked', { scopes: REQUIRED, limitMs: 20_000 });
        // Never accepted on the way back: stale, then refused.
        expect(back.seen.filter((seen) => seen !== '503 feed_stale' && seen !== '401 revoked')).toEqual([]);
        await cut.until(kept.token, '200', { scopes: REQUIRED });
        console.log(
          `replica cut off (${DATABASE_KIND}): feed_stale ${stale.ms.toFixed(0)} ms after the cut; the revocation refused by the others in ${Math.max(...others.map(({ ms }) => ms)).toFixed(0)} ms (${othersMs.toFixed(0)} ms with the request); refused by the cut-off one ${back.ms.toFixed(0)} ms after the network came back`,
        );
      } finally {
        await proxy.close();
      }
    }, 60_000);

    it('streams deleted for idleness: each verifier starts again, still refuses what was revoked before, and follows the feed again', async () => {
      const options = await register('reaped');
      const replicas = await Promise.all(
        ['A', 'B'].map((name) => ResourceServerProcess.start(`replica ${name}`, options)),
      );
      const before = await subject('admin', options.audience, 'revoked before the streams were deleted');
      const demoted = await subject('role change', options.audience, 'demoted before the streams were deleted');
      const gap = await subject('owner', options.audience, 'revoked while the streams were gone');
      const valid = await subject('owner', options.audience, 'still valid');
      const after = await subject('owner', options.audience, 'revoked after the new streams');
      for (const replica of replicas) {
        for (const made of [before, demoted, gap, valid, after]) {
          expect(await answer(replica, made)).toEqual({ server: replica.name, change: made.change, outcome: '200' });
        }
      }
      await apply(before);
      await apply(demoted);
      for (const replica of replicas) {
        await replica.until(before.token, '401 revoked', { scopes: REQUIRED });
        await replica.until(demoted.token, '403 insufficient_scope', { scopes: REQUIRED });
      }
      const streams = await instanceStreams(options.clientId);
      expect(streams).toHaveLength(2);

      // The retention job, at a time when the streams have not been polled for longer than SSF_STREAM_IDLE_SECONDS
      // (and the events are still well within SSF_EVENT_RETENTION_DAYS).
      await followed.get(SsfRetention).prune(new Date(Date.now() + 2 * 3600 * 1000));
      expect(await instanceStreams(options.clientId)).toEqual([]);
      const deletedAt = performance.now();
      await apply(gap);

      // Watched on each replica until it has refused the key revoked while the streams were gone, and 10 answers more:
      // what was revoked or narrowed before is never accepted; that key is refused once the verifier has started
      // again, and never accepted after that.
      const watched = await Promise.all(
        replicas.map(async (replica) => {
          const seen: Record<'before' | 'demoted' | 'gap' | 'valid', string[]> = {
            before: [],
            demoted: [],
            gap: [],
            valid: [],
          };
          let gapRefusedMs: number | undefined;
          let afterRefused = 0;
          while (afterRefused < 10 && performance.now() - deletedAt < 30_000) {
            const answers = await Promise.all(
              [before, demoted, gap, valid].map(async (made) => outcome(await replica.check(made.token, REQUIRED))),
            );
            (['before', 'demoted', 'gap', 'valid'] as const).forEach((name, index) => {
              if (seen[name].at(-1) !== answers[index]) seen[name].push(answers[index]);
            });
            if (gapRefusedMs === undefined && answers[2] === '401 revoked') {
              gapRefusedMs = performance.now() - deletedAt;
            } else if (gapRefusedMs !== undefined) {
              afterRefused += 1;
            }
            await pause(20); // the pace of the watch
          }
          return { replica: replica.name, seen, gapRefusedMs };
        }),
      );
      for (const { replica, seen, gapRefusedMs } of watched) {
        const failClosed = (expected: string) => (answers: string[]) =>
          answers.filter((seenOutcome) => seenOutcome !== expected && seenOutcome !== '503 feed_stale');
        expect({ replica, before: failClosed('401 revoked')(seen.before) }).toEqual({ replica, before: [] });
        expect({ replica, demoted: failClosed('403 insufficient_scope')(seen.demoted) }).toEqual({
          replica,
          demoted: [],
        });
        // Accepted at most until the verifier learns its stream is gone; then refused for good.
        const firstRefused = seen.gap.indexOf('401 revoked');
        expect({ replica, refused: firstRefused >= 0, afterwards: seen.gap.slice(firstRefused) }).toEqual({
          replica,
          refused: true,
          afterwards: ['401 revoked'],
        });
        expect({ replica, valid: seen.valid.at(-1), gapRefusedMs }).toEqual({
          replica,
          valid: '200',
          gapRefusedMs: expect.any(Number),
        });
      }
      // New streams, one per replica.
      const renewed = await instanceStreams(options.clientId);
      expect(renewed).toHaveLength(2);
      expect(renewed.filter((id) => streams.includes(id))).toEqual([]);

      const revokedAt = performance.now();
      await apply(after);
      await Promise.all(replicas.map((replica) => replica.until(after.token, '401 revoked', { scopes: REQUIRED })));
      const afterMs = performance.now() - revokedAt;
      console.log(
        `streams deleted for idleness (${DATABASE_KIND}): the key revoked meanwhile refused ${watched.map(({ gapRefusedMs }) => gapRefusedMs?.toFixed(0)).join(' and ')} ms after; a revocation on the new streams in ${afterMs.toFixed(0)} ms`,
      );
    }, 60_000);
  });
});
