/**
 * `npm run bench:revocation`: how long a revocation takes to reach a resource server that uses the verifier
 * (verifier/), against the built server: SQLite by default (one instance), or two instances on PostgreSQL when
 * DATABASE_URL is set (the key is revoked at A, the verifier follows B). BENCH_REVOCATIONS (50) keys are revoked one
 * after another through the API; for each, `verify` is called every 2 ms until it refuses. Prints p50, p99 and max in ms.
 *
 * Second scenario, "waiting" (the issue: a revocation with 2,000 polls waiting commits in under 100 ms):
 * BENCH_WAITING_POLLS (2000) long polls wait at Gatehouse, spread over BENCH_WAITING_STREAMS (125) instance streams
 * (`POST /ssf/stream`, ADR 0031; 1,000 streams a resource server at most, so more take a second resource server), 16
 * a stream by default: exactly the per-stream cap (SSF_MAX_WAITING_POLLS, 16), the fewest streams that hold 2,000
 * polls, and the shape where a wake-up has the most waiters per stream to answer; BENCH_WAITING_STREAMS=2000 is the
 * other extreme (one poll a stream, as a verifier instance polls, and 2,000 delivery rows written by each revocation).
 * A server without `POST /ssf/stream` (404) gets every poll on the resource server's default stream (`POST /ssf/poll`).
 * On PostgreSQL BENCH_WAITING_AT says where the polls wait: "revoking" (instance A), "other" (B) or "both" (half at
 * each, the default). Then BENCH_WAITING_REVOCATIONS (20) keys are revoked through the API at A, one at a time; each
 * time the polls are all waiting again and the server is quiet first. Prints, in ms, p50/p99/max of (a) the revocation
 * request: sent -> committed (a reader of the database beside the server, asking every ms, sees the key revoked) and
 * sent -> response; (b) sent -> the first and the last of the polls answered with the revocation's SET
 * (BENCH_WAITING_POLLS=0: the revocation with the same streams and nothing waiting). The polls behave as verifiers do:
 * each acknowledges what it received in its next poll, at once.
 * BENCH_WAITING_VERBOSE=1 prints a line for each revocation; BENCH_WAITING_SETTLE_MS (500) is the pause before each.
 * BENCH_REVOCATION_SCENARIOS picks the scenarios ("latency,waiting", the default, both); BENCH_SERVER_ENV ("NAME=value
 * ...") is added to the servers' environment. This process and each instance hold a socket a poll: with `ulimit -n`
 * below the number of polls + 256 the scenario is not run (exit code 1).
 */
import { ChildProcess, execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { Agent } from 'node:http';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Client } from 'pg';
import { loadBetterSqlite3 } from '../src/database/sqlite-driver';
import { createVerifier, Verifier } from '../verifier/src/index';
import { freePort, httpCall, openFileLimit, productionSettings, waitFor } from './support';

const ROOT = resolve(__dirname, '..', '..');
const REVOCATIONS = Number(process.env.BENCH_REVOCATIONS ?? 50);
const POSTGRES_URL = /^postgres(ql)?:\/\//.test(process.env.DATABASE_URL ?? '') ? process.env.DATABASE_URL : undefined;
const AUDIENCE = 'https://bench-resource.example.com';
const SCENARIOS = new Set(
  (process.env.BENCH_REVOCATION_SCENARIOS ?? 'latency,waiting').split(',').map((name) => name.trim()),
);
const WAITING_POLLS = Number(process.env.BENCH_WAITING_POLLS ?? 2000);
const WAITING_STREAMS = Number(process.env.BENCH_WAITING_STREAMS ?? 125);
const WAITING_REVOCATIONS = Number(process.env.BENCH_WAITING_REVOCATIONS ?? 20);
const WAITING_AT = process.env.BENCH_WAITING_AT ?? 'both';
/** The least pause after the polls are back and the server is quiet, before the next revocation. */
const SETTLE_MS = Number(process.env.BENCH_WAITING_SETTLE_MS ?? 500);
/** BENCH_WAITING_VERBOSE=1: a line for each revocation. */
const VERBOSE = process.env.BENCH_WAITING_VERBOSE === '1';
const SERVER_ENV = Object.fromEntries(
  (process.env.BENCH_SERVER_ENV ?? '')
    .split(' ')
    .filter((pair) => pair.includes('='))
    .map((pair) => [pair.slice(0, pair.indexOf('=')), pair.slice(pair.indexOf('=') + 1)]),
);
/** ADR 0031: instance streams a resource server may have, and long polls of one stream waiting at one instance. */
const STREAMS_PER_RESOURCE_SERVER = 1000;
const MAX_WAITING_POLLS = Number(SERVER_ENV.SSF_MAX_WAITING_POLLS ?? 16);
/** How long a revocation's polls get to be answered before the missing ones are counted as missed. */
const ROUND_TIMEOUT_MS = 20_000;

async function refused(verifier: Verifier, token: string): Promise<boolean> {
  try {
    await verifier.verify(token);
    return false;
  } catch {
    return true;
  }
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** The q-th percentile of sorted values (nearest rank), as the latency scenario has always reported it. */
function percentile(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}

function summary(values: readonly number[]): string {
  if (values.length === 0) return 'no sample';
  const sorted = [...values].sort((a, b) => a - b);
  return (
    `p50 ${percentile(sorted, 50).toFixed(1)} ms, p99 ${percentile(sorted, 99).toFixed(1)} ms, ` +
    `max ${sorted.at(-1)!.toFixed(1)} ms`
  );
}

interface Credentials {
  client_id: string;
  client_secret: string;
}

interface Setup {
  /** The instances' ports: [A] on SQLite, [A, B] on PostgreSQL. */
  instances: number[];
  issuer: string;
  /** The owner's session: creates and revokes the keys, at A. */
  session: Record<string, string>;
  resourceServers: Credentials[];
  /** Where the servers keep their data: the SQLite file, or the PostgreSQL schema. */
  database: { sqlite: string } | { schema: string };
}

/** The original scenario: revoke -> refused by the verifier. */
async function latencyScenario(setup: Setup): Promise<void> {
  const [server] = setup.resourceServers;
  const { session, issuer, instances } = setup;
  const revokingAt = `http://127.0.0.1:${instances[0]}`;
  const verifier = await createVerifier({
    issuer,
    audience: AUDIENCE,
    clientId: server.client_id,
    clientSecret: server.client_secret,
  });
  try {
    const latencies: number[] = [];
    for (let i = 0; i < REVOCATIONS; i += 1) {
      const created = (await (
        await fetch(`${revokingAt}/v1/user-api-keys`, { method: 'POST', headers: session, body: `{"label":"k${i}"}` })
      ).json()) as { api_key: { id: string }; opaque_key: string };
      const { access_token } = (await (
        await fetch(`${revokingAt}/v1/token`, {
          method: 'POST',
          headers: { authorization: `ApiKey ${created.opaque_key}`, 'content-type': 'application/json' },
          body: JSON.stringify({ resource: AUDIENCE }),
        })
      ).json()) as { access_token: string };
      if (await refused(verifier, access_token)) throw new Error('a fresh token was refused');
      const start = performance.now();
      await fetch(`${revokingAt}/v1/user-api-keys/${created.api_key.id}`, { method: 'DELETE', headers: session });
      while (!(await refused(verifier, access_token))) await new Promise((r) => setTimeout(r, 2));
      latencies.push(performance.now() - start);
    }
    latencies.sort((a, b) => a - b);
    const at = (p: number) => latencies[Math.min(latencies.length - 1, Math.ceil((p / 100) * latencies.length) - 1)];
    const where = POSTGRES_URL === undefined ? 'SQLite, one instance' : 'PostgreSQL, revoked at A, verifier on B';
    console.log(
      `revoke -> refused by the verifier (${where}, ${REVOCATIONS} revocations): ` +
        `p50 ${at(50).toFixed(1)} ms, p99 ${at(99).toFixed(1)} ms, max ${latencies.at(-1)!.toFixed(1)} ms`,
    );
  } finally {
    await verifier.close();
  }
}

/** A long poll's place: the instance it waits at, its stream's poll path, and its resource server's credentials. */
interface Poller {
  base: string;
  path: string;
  authorization: string;
}

/** One revocation being delivered: which key, when its request was sent, and which polls have its SET. */
interface Round {
  keyId: string;
  start: number;
  answered: Uint8Array;
  count: number;
  first: number;
  last: number;
  done: () => void;
}

const basic = (server: Credentials): string =>
  `Basic ${Buffer.from(`${server.client_id}:${server.client_secret}`).toString('base64')}`;

/** Whether one of these SETs is the revocation of `keyId` (the SET's payload names the key as its subject). */
function carries(sets: Record<string, string>, keyId: string): boolean {
  return Object.values(sets).some((set) => {
    const payload = JSON.parse(Buffer.from(set.split('.')[1], 'base64url').toString('utf8')) as {
      sub_id?: { id?: string };
    };
    return payload.sub_id?.id === keyId;
  });
}

/**
 * The instance streams the polls spread over, made at A (each resource server's first `streams` of them); or, when
 * the server has no stream management (404), the first resource server's default stream.
 */
async function openStreams(control: Agent, setup: Setup, count: number): Promise<Array<Omit<Poller, 'base'>>> {
  const at = `http://127.0.0.1:${setup.instances[0]}`;
  const streams: Array<Omit<Poller, 'base'>> = [];
  for (let i = 0; i < count; i += 1) {
    const authorization = basic(setup.resourceServers[Math.floor(i / STREAMS_PER_RESOURCE_SERVER)]);
    const answer = await httpCall(
      control,
      `${at}/ssf/stream`,
      'POST',
      { authorization, 'content-type': 'application/json' },
      JSON.stringify({ delivery: { method: 'urn:ietf:rfc:8936' } }),
    );
    if (answer.status === 404 && i === 0) return [{ path: '/ssf/poll', authorization }];
    if (answer.status >= 300) throw new Error(`POST /ssf/stream: ${answer.status} ${answer.body}`);
    const { delivery } = JSON.parse(answer.body) as { delivery: { endpoint_url: string } };
    streams.push({ path: new URL(delivery.endpoint_url).pathname, authorization });
  }
  return streams;
}

/**
 * A reader of the servers' database beside them, asked every millisecond whether a key is revoked: when a revocation
 * committed, whatever the server does before it answers the request.
 */
async function commitWatcher(
  database: Setup['database'],
): Promise<{ revoked(keyId: string, deadline: number): Promise<boolean>; close(): Promise<void> }> {
  const sql = 'SELECT status FROM api_keys WHERE id = $id';
  if ('sqlite' in database) {
    const Database = loadBetterSqlite3();
    const db = new Database(database.sqlite, { readonly: true });
    const status = db.prepare(sql);
    return {
      revoked: async (id, deadline) => {
        while ((status.get({ id }) as { status: string }).status !== 'REVOKED') {
          if (Date.now() > deadline) return false;
          await sleep(1);
        }
        return true;
      },
      close: () => {
        db.close();
        return Promise.resolve();
      },
    };
  }
  const client = new Client({ connectionString: POSTGRES_URL, options: `-c search_path=${database.schema}` });
  await client.connect();
  return {
    revoked: async (id, deadline) => {
      while ((await client.query<{ status: string }>(sql.replace('$id', '$1'), [id])).rows[0].status !== 'REVOKED') {
        if (Date.now() > deadline) return false;
        await sleep(1);
      }
      return true;
    },
    close: () => client.end(),
  };
}

/** Resolves once `/readyz` (through the database pool) answers within 10 ms three times in a row at each base. */
async function quiet(control: Agent, bases: readonly string[]): Promise<void> {
  for (const base of bases) {
    for (let fast = 0, tries = 0; fast < 3 && tries < 1000; tries += 1) {
      const start = performance.now();
      await httpCall(control, `${base}/readyz`, 'GET', {});
      fast = performance.now() - start < 10 ? fast + 1 : 0;
      await sleep(20);
    }
  }
}

/** The "waiting" scenario: revocations while BENCH_WAITING_POLLS long polls wait (see the top of the file). */
async function waitingScenario(setup: Setup): Promise<void> {
  const limit = openFileLimit();
  if (limit !== undefined && limit < WAITING_POLLS + 256) {
    console.error(
      `waiting: not run: ulimit -n is ${limit}, and ${WAITING_POLLS} polls hold as many sockets here and at the ` +
        `server; run \`ulimit -n ${WAITING_POLLS + 1024}\` first`,
    );
    process.exitCode = 1;
    return;
  }
  const [a, b = a] = setup.instances.map((port) => `http://127.0.0.1:${port}`);
  // The owner's requests and the probes: one warm connection, apart from the polls.
  const control = new Agent({ keepAlive: true, maxSockets: 1 });
  // One socket a poll, kept for its next poll as a verifier keeps its connection.
  const polling = new Agent({ keepAlive: true, maxSockets: WAITING_POLLS + 16, maxFreeSockets: WAITING_POLLS + 16 });
  const streams = await openStreams(control, setup, WAITING_STREAMS);
  const perStream = Math.ceil(WAITING_POLLS / streams.length);
  const bases = POSTGRES_URL === undefined || WAITING_AT === 'revoking' ? [a] : WAITING_AT === 'other' ? [b] : [a, b];
  const pollers: Poller[] = Array.from({ length: WAITING_POLLS }, (_, i) => ({
    ...streams[Math.floor(i / perStream)],
    base: bases[i % bases.length],
  }));
  const shape =
    streams.length === 1 && streams[0].path === '/ssf/poll'
      ? `${WAITING_POLLS} polls on the default stream (POST /ssf/poll; the server has no POST /ssf/stream)`
      : `${streams.length} instance streams x ${perStream} polls`;
  const pollsAt = bases.length === 2 ? 'half at A, half at B' : bases[0] === a ? 'at A' : 'at B';
  const where = POSTGRES_URL === undefined ? 'SQLite, one instance' : `PostgreSQL, revoked at A, polls ${pollsAt}`;
  if (streams.length > 1 && Math.ceil(perStream / bases.length) > MAX_WAITING_POLLS) {
    console.warn(`waiting: ${perStream} polls a stream exceed the cap of ${MAX_WAITING_POLLS}: expect 429s`);
  }

  let inFlight = 0;
  let stopped = false;
  let tooMany = 0;
  let failures = 0;
  let lastFailure = 0;
  let round: Round | undefined;
  const poll = async (index: number): Promise<void> => {
    const poller = pollers[index];
    let ack: string[] = [];
    // A verifier's backoff after a failed poll (verifier/src/feed.ts): 250 ms, doubled up to 5 s.
    let backoff = 250;
    const failed = async (message: string): Promise<void> => {
      failures += 1;
      lastFailure = Date.now();
      if (failures <= 3) console.warn(`waiting: a poll failed: ${message}`);
      await sleep(backoff);
      backoff = Math.min(backoff * 2, 5000);
    };
    while (!stopped) {
      inFlight += 1;
      let answer;
      try {
        answer = await httpCall(
          polling,
          `${poller.base}${poller.path}`,
          'POST',
          { authorization: poller.authorization, 'content-type': 'application/json' },
          JSON.stringify({ ack }),
        );
      } catch (error) {
        if (stopped) return;
        await failed((error as Error).message);
        continue;
      } finally {
        inFlight -= 1;
      }
      if (answer.status === 429) {
        tooMany += 1;
        await sleep(Number(answer.headers['retry-after'] ?? 1) * 1000);
        continue;
      }
      if (answer.status !== 200) {
        await failed(`${answer.status} ${answer.body}`);
        continue;
      }
      backoff = 250;
      const { sets } = JSON.parse(answer.body) as { sets: Record<string, string> };
      ack = Object.keys(sets);
      const current = round;
      if (current !== undefined && current.answered[index] === 0 && carries(sets, current.keyId)) {
        current.answered[index] = 1;
        current.count += 1;
        current.last = performance.now();
        if (current.count === 1) current.first = current.last;
        if (current.count === WAITING_POLLS) current.done();
      }
    }
  };
  /**
   * Every poll sent, none backing off and none failed for a second, then the servers quiet (the polls' own queries
   * done), then SETTLE_MS.
   */
  const settle = async (): Promise<void> => {
    const deadline = Date.now() + 60_000;
    const ready = (): boolean => inFlight === WAITING_POLLS && Date.now() - lastFailure > 1000;
    while (!ready() && Date.now() < deadline) await sleep(10);
    if (!ready()) console.warn(`waiting: ${inFlight} of ${WAITING_POLLS} polls waiting, and some failing`);
    await quiet(control, bases);
    await sleep(SETTLE_MS);
  };

  const session = setup.session;
  const polls = pollers.map((_, i) => poll(i));
  const revocations: number[] = [];
  const commits: number[] = [];
  const watcher = await commitWatcher(setup.database);
  const firstAnswers: number[] = [];
  const lastAnswers: number[] = [];
  const refusedRevocations: string[] = [];
  let missed = 0;
  try {
    await settle();
    for (let i = 0; i < WAITING_REVOCATIONS; i += 1) {
      let created = await httpCall(control, `${a}/v1/user-api-keys`, 'POST', session, `{"label":"w${i}"}`);
      for (let retries = 0; created.status === 503 && retries < 10; retries += 1) {
        console.warn(`waiting: POST /v1/user-api-keys answered 503; again in 1 s`);
        await sleep(1000);
        created = await httpCall(control, `${a}/v1/user-api-keys`, 'POST', session, `{"label":"w${i}"}`);
      }
      if (created.status >= 300) throw new Error(`POST /v1/user-api-keys: ${created.status} ${created.body}`);
      const keyId = (JSON.parse(created.body) as { api_key: { id: string } }).api_key.id;
      await settle();
      let done!: () => void;
      const allAnswered = new Promise<void>((r) => (done = r));
      const current: Round = {
        keyId,
        start: 0,
        answered: new Uint8Array(WAITING_POLLS),
        count: 0,
        first: 0,
        last: 0,
        done,
      };
      round = current;
      current.start = performance.now();
      const committed = watcher
        .revoked(keyId, Date.now() + ROUND_TIMEOUT_MS)
        .then((seen) => (seen ? performance.now() - current.start : undefined));
      const revoked = await httpCall(control, `${a}/v1/user-api-keys/${keyId}`, 'DELETE', session);
      const took = performance.now() - current.start;
      if (revoked.status >= 300) {
        // Not a revocation: counted apart, and its key stays (the polls have nothing to answer).
        round = undefined;
        refusedRevocations.push(`${revoked.status} after ${took.toFixed(0)} ms`);
        console.warn(`waiting: DELETE /v1/user-api-keys answered ${revoked.status} ${revoked.body}`);
        continue;
      }
      revocations.push(took);
      const commit = await committed;
      if (commit !== undefined) commits.push(commit);
      if (WAITING_POLLS > 0) await Promise.race([allAnswered, sleep(ROUND_TIMEOUT_MS)]);
      round = undefined;
      missed += WAITING_POLLS - current.count;
      if (current.count > 0) {
        firstAnswers.push(current.first - current.start);
        lastAnswers.push(current.last - current.start);
      }
      if (VERBOSE) {
        console.log(
          `waiting: revocation ${i + 1}: committed ${commits.at(-1)?.toFixed(1)} ms, answered ${took.toFixed(1)} ms; ` +
            `${current.count} polls answered, the first at ${(current.first - current.start).toFixed(1)} ms, ` +
            `the last at ${(current.last - current.start).toFixed(1)} ms; ${failures} failed polls so far`,
        );
      }
    }
  } finally {
    stopped = true;
    polling.destroy();
    control.destroy();
    await Promise.all(polls);
    await watcher.close();
  }
  console.log(
    `revocation with ${WAITING_POLLS} polls waiting (${where}; ${shape}; ${WAITING_REVOCATIONS} revocations):\n` +
      `  revocation request, sent -> committed (a reader of the database sees it): ${summary(commits)}\n` +
      `  revocation request, sent -> response: ${summary(revocations)}\n` +
      `  sent -> the first poll answered with its SET: ${summary(firstAnswers)}\n` +
      `  sent -> the last poll answered with its SET: ${summary(lastAnswers)}` +
      (missed > 0 ? ` (${missed} answers never came within ${ROUND_TIMEOUT_MS / 1000} s)` : '') +
      (tooMany > 0 ? `; ${tooMany} polls answered 429` : '') +
      (failures > 0 ? `; ${failures} polls failed` : '') +
      (refusedRevocations.length > 0 ? `\n  revocations refused: ${refusedRevocations.join(', ')}` : ''),
  );
}

async function main(): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), 'gatehouse-revocation-'));
  const ports = [await freePort(), await freePort()];
  const issuer = `http://127.0.0.1:${ports[1]}`;
  const base: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    NODE_ENV: 'development',
    HOST: '127.0.0.1',
    METRICS_PORT: 'off',
    LOG_LEVEL: 'warn',
    DATA_DIR: dataDir,
    DATABASE_URL: POSTGRES_URL ?? `sqlite:${join(dataDir, 'gatehouse.sqlite')}`,
    DATABASE_SCHEMA: POSTGRES_URL === undefined ? undefined : `bench_${randomBytes(4).toString('hex')}`,
    ...productionSettings(),
    // One issuer for both instances: the verifier follows the second.
    JWT_ISSUER: issuer,
    PUBLIC_BASE_URL: issuer,
    API_KEY_MAX_ACTIVE_PER_USER: String(REVOCATIONS + 10),
  };
  const cli = (...argv: string[]): Record<string, string> =>
    JSON.parse(execFileSync('node', [join(ROOT, 'dist/cli.js'), ...argv], { env: base, encoding: 'utf8' })) as Record<
      string,
      string
    >;
  const addResourceServer = (name: string, audience: string): Credentials => {
    const { client_id, client_secret } = cli('resource-server', 'add', '--name', name, '--audience', audience);
    return { client_id, client_secret };
  };
  const admin = cli('bootstrap', '--org', 'bench', '--email', 'bench@bench.test');
  const resourceServers = [addResourceServer('bench', AUDIENCE)];
  if (SCENARIOS.has('waiting')) {
    for (let i = 2; i <= Math.ceil(WAITING_STREAMS / STREAMS_PER_RESOURCE_SERVER); i += 1) {
      resourceServers.push(addResourceServer(`bench-${i}`, `https://bench-resource-${i}.example.com`));
    }
  }
  const session = { authorization: `Bearer ${admin.session_token}`, 'content-type': 'application/json' };
  const setup: Setup = {
    instances: POSTGRES_URL === undefined ? [ports[1]] : ports,
    issuer,
    session,
    resourceServers,
    database:
      POSTGRES_URL === undefined ? { sqlite: join(dataDir, 'gatehouse.sqlite') } : { schema: base.DATABASE_SCHEMA! },
  };

  // Each scenario with servers of its own: SQLite, one process writes; PostgreSQL, instance A (revokes) and instance B
  // (the verifier's feed).
  const withServers = async (env: NodeJS.ProcessEnv, scenario: (setup: Setup) => Promise<void>): Promise<void> => {
    const children: ChildProcess[] = setup.instances.map((port) =>
      spawn('node', [join(ROOT, 'dist/main.js')], { env: { ...env, PORT: String(port) }, stdio: 'inherit' }),
    );
    try {
      for (const port of setup.instances) await waitFor(`http://127.0.0.1:${port}/healthz`, 20_000);
      await scenario(setup);
    } finally {
      for (const child of children) child.kill('SIGTERM');
      await Promise.all(
        children.map((child) => new Promise((r) => (child.exitCode !== null ? r(null) : child.once('exit', r)))),
      );
    }
  };
  try {
    if (SCENARIOS.has('latency')) await withServers({ ...base, ...SERVER_ENV }, latencyScenario);
    // The polls wait through a whole revocation round.
    if (SCENARIOS.has('waiting')) {
      await withServers({ ...base, SSF_POLL_WAIT_SECONDS: '60', ...SERVER_ENV }, waitingScenario);
    }
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
    if (POSTGRES_URL !== undefined) {
      const client = new Client({ connectionString: POSTGRES_URL });
      await client.connect();
      await client.query(`DROP SCHEMA IF EXISTS "${base.DATABASE_SCHEMA}" CASCADE`);
      await client.end();
    }
  }
}

void main();
