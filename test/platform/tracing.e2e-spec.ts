import { ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createServer, Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { TEST_BUILD_DIR_VARIABLE } from '../support/build-directory';
import { FakeDatadog } from '../support/fakes/fake-datadog';
import { datadogKeys, monitoringEnv, resetFakeDatadog } from '../support/monitoring';
import { freePort } from '../support/ports';
import {
  createTestApp,
  DATABASE_KIND,
  TestApp,
  TestDatabase,
  createTestDatabase,
  testSecrets,
} from '../support/test-app';
import { waitFor } from '../support/wait';

/**
 * OpenTelemetry traces (docs/deployment.md#traces): the built server, run with OTEL_EXPORTER_OTLP_ENDPOINT pointing at
 * an OTLP/HTTP receiver this suite runs on loopback (JSON encoding), exports a span per request named by its route,
 * child spans for PostgreSQL, Redis and outbound fetch calls, and no secret in any of them; the access log names the
 * trace. Off, the server loads no OpenTelemetry module at all.
 */

interface OtlpValue {
  stringValue?: string;
  intValue?: string | number;
  boolValue?: boolean;
  doubleValue?: number;
  arrayValue?: { values: OtlpValue[] };
}
interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes: Array<{ key: string; value: OtlpValue }>;
}
interface Exported {
  service: string;
  spans: OtlpSpan[];
  raw: string;
}

const SERVER = 2;
const CLIENT = 3;

function attribute(span: OtlpSpan, key: string): string | number | boolean | undefined {
  const value = span.attributes.find((entry) => entry.key === key)?.value;
  if (value === undefined) return undefined;
  return (
    value.stringValue ??
    (value.intValue !== undefined ? Number(value.intValue) : (value.boolValue ?? value.doubleValue))
  );
}

function statusOf(span: OtlpSpan): unknown {
  return attribute(span, 'http.response.status_code') ?? attribute(span, 'http.status_code');
}

/** The database a client span talks to (the stable name, or the older one). */
function dbSystem(span: OtlpSpan): unknown {
  return attribute(span, 'db.system.name') ?? attribute(span, 'db.system');
}

/** An OTLP/HTTP receiver: POST /v1/traces with `application/json` bodies, kept as they came. */
async function startReceiver(): Promise<{ server: Server; url: string; exports: Exported[] }> {
  const exports: Exported[] = [];
  const server = createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => (body += chunk));
    req.on('end', () => {
      if (req.method === 'POST' && req.url === '/v1/traces' && req.headers['content-type'] === 'application/json') {
        const parsed = JSON.parse(body) as {
          resourceSpans: Array<{
            resource: { attributes: Array<{ key: string; value: OtlpValue }> };
            scopeSpans: Array<{ spans: OtlpSpan[] }>;
          }>;
        };
        for (const resource of parsed.resourceSpans) {
          const service = resource.resource.attributes.find((entry) => entry.key === 'service.name')?.value.stringValue;
          exports.push({
            service: service ?? '',
            spans: resource.scopeSpans.flatMap((scope) => scope.spans),
            raw: body,
          });
        }
        res.writeHead(200, { 'Content-Type': 'application/json' }).end('{}');
      } else {
        res.writeHead(404).end();
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, exports };
}

interface Running {
  url: string;
  output: () => string;
  stop: () => Promise<void>;
}

/** The servers startServer started that have not exited: afterAll stops them, even one whose start Jest gave up on. */
const started = new Set<ChildProcess>();

/** The server compiled by Jest's global setup, as `node main.js`, on the suite's database. */
async function startServer(database: TestDatabase, env: Record<string, string>): Promise<Running> {
  const port = await freePort();
  const child: ChildProcess = spawn(process.execPath, [join(process.env[TEST_BUILD_DIR_VARIABLE]!, 'main.js')], {
    cwd: database.env.DATA_DIR,
    env: {
      PATH: process.env.PATH,
      ...testSecrets,
      ...database.env,
      NODE_ENV: 'test',
      HOST: '127.0.0.1',
      PORT: String(port),
      METRICS_PORT: '0',
      LOG_LEVEL: 'info',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  started.add(child);
  const exited = new Promise<void>((resolve) =>
    child.once('exit', () => {
      started.delete(child);
      resolve();
    }),
  );
  const stop = async (): Promise<void> => {
    if (child.exitCode === null) child.kill('SIGTERM');
    await exited;
  };
  const url = `http://127.0.0.1:${port}`;
  try {
    await waitFor(
      'the server answers /healthz',
      async () => {
        if (child.exitCode !== null) throw new Error(`server exited at start:\n${output}`);
        return (await fetch(`${url}/healthz`).catch(() => undefined))?.status === 200;
      },
      { timeoutMs: 30_000 },
    );
  } catch (error) {
    await stop();
    throw error;
  }
  return { url, output: () => output, stop };
}

/** Stops every server still running. */
async function stopAll(): Promise<void> {
  await Promise.all(
    [...started].map((child) => {
      const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      if (child.exitCode === null) child.kill('SIGTERM');
      return exited;
    }),
  );
}

describe('OpenTelemetry traces', () => {
  let database: TestDatabase;
  let t: TestApp;
  let fake: FakeDatadog;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  let server: Running;
  const redisUrl = process.env.REDIS_URL_FOR_TESTS;

  beforeAll(async () => {
    database = createTestDatabase();
    fake = await FakeDatadog.start();
    receiver = await startReceiver();
    // The suite's own app on the same database makes the members and keys the server then serves.
    t = await createTestApp({ database });
    server = await startServer(database, {
      ...(monitoringEnv(fake.url) as Record<string, string>),
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_BSP_SCHEDULE_DELAY: '50',
      ...(redisUrl !== undefined
        ? { REDIS_URL: redisUrl, REDIS_KEY_PREFIX: `trace-${randomBytes(4).toString('hex')}:` }
        : {}),
    });
  }, 60_000);

  afterAll(async () => {
    await server?.stop();
    await stopAll();
    await t?.close();
    await database?.drop();
    await fake?.close();
    receiver?.server.close();
  });

  const spans = (): OtlpSpan[] => receiver.exports.flatMap((batch) => batch.spans);

  it('a span per request named by its route, its parent from traceparent, child spans for the database, Redis and fetch; no secret anywhere; the trace id in the access log', async () => {
    const admin = await t.user({ org: 'tracing', role: 'admin' });
    const key = await t.createKey(admin, 'traced');
    const keys = datadogKeys('tracing');
    resetFakeDatadog(fake, keys);
    const traceId = randomBytes(16).toString('hex');
    const parentId = randomBytes(8).toString('hex');

    const exchange = await fetch(`${server.url}/v1/token`, {
      method: 'POST',
      headers: { Authorization: `ApiKey ${key.value}`, traceparent: `00-${traceId}-${parentId}-01` },
    });
    expect(exchange.status).toBe(200);
    const { access_token: accessToken } = (await exchange.json()) as { access_token: string };
    // A failed exchange counts against the client address (in Redis, when configured).
    const refused = await fetch(`${server.url}/v1/token`, {
      method: 'POST',
      headers: { Authorization: `ApiKey ${key.value.slice(0, -4)}0000` },
    });
    expect(refused.status).toBe(401);
    const read = await fetch(`${server.url}/v1/user-api-keys/${key.id}?note=query-secret&t=${accessToken}`, {
      headers: { Authorization: `Bearer ${accessToken}` },
    });
    expect(read.status).toBe(200);
    const validate = await fetch(`${server.url}/v1/notification-integrations/monitoring/validate`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${admin.token}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ ...keys, site: 'datadoghq.com' }),
    });
    expect(validate.status).toBe(200);
    expect((await fetch(`${server.url}/healthz`)).status).toBe(200);

    const serverSpan = (name: string): OtlpSpan | undefined =>
      spans().find((s) => s.kind === SERVER && s.name === name);
    await waitFor('the four server spans exported', () =>
      ['POST /v1/token', 'GET /v1/user-api-keys/:id', 'POST /v1/notification-integrations/monitoring/validate'].every(
        (name) => serverSpan(name) !== undefined,
      ),
    );
    expect(receiver.exports.every((batch) => batch.service === 'gatehouse')).toBe(true);

    // The exchange continues the caller's trace, under the caller's span.
    const token = spans().find((s) => s.kind === SERVER && s.name === 'POST /v1/token' && s.traceId === traceId)!;
    expect(token).toBeDefined();
    expect(token.parentSpanId).toBe(parentId);
    expect(attribute(token, 'http.route')).toBe('/v1/token');
    expect(statusOf(token)).toBe(200);

    const childrenOf = (parent: OtlpSpan): OtlpSpan[] => {
      const all = spans().filter((s) => s.traceId === parent.traceId);
      const below = new Set([parent.spanId]);
      for (let grew = true; grew;) {
        grew = false;
        for (const s of all) {
          if (s.parentSpanId !== undefined && below.has(s.parentSpanId) && !below.has(s.spanId)) {
            below.add(s.spanId);
            grew = true;
          }
        }
      }
      return all.filter((s) => s.spanId !== parent.spanId && below.has(s.spanId));
    };

    // The resource read: its route template, never the id or the query string.
    const keyRead = serverSpan('GET /v1/user-api-keys/:id')!;
    expect(attribute(keyRead, 'http.route')).toBe('/v1/user-api-keys/:id');

    if (DATABASE_KIND === 'postgres') {
      const queries = childrenOf(token).filter((s) => dbSystem(s) === 'postgresql');
      expect(queries.length).toBeGreaterThan(0);
      expect(queries.every((s) => s.kind === CLIENT)).toBe(true);
      expect(childrenOf(keyRead).some((s) => dbSystem(s) === 'postgresql')).toBe(true);
    }
    if (redisUrl !== undefined) {
      await waitFor('the refused exchange and its Redis spans exported', () =>
        spans().some((s) => s.kind === SERVER && s.name === 'POST /v1/token' && statusOf(s) === 401),
      );
      const refusal = spans().find((s) => s.kind === SERVER && s.name === 'POST /v1/token' && statusOf(s) === 401)!;
      await waitFor('a Redis span under the refused exchange', () =>
        childrenOf(refusal).some((s) => dbSystem(s) === 'redis'),
      );
    }

    // The provider calls, as children of the request that made them.
    const validation = serverSpan('POST /v1/notification-integrations/monitoring/validate')!;
    await waitFor('the outbound calls exported', () =>
      childrenOf(validation).some((s) => s.kind === CLIENT && String(attribute(s, 'url.full')).startsWith(fake.url)),
    );
    const outbound = childrenOf(validation).filter((s) => String(attribute(s, 'url.full')).startsWith(fake.url));
    expect(outbound.map((s) => new URL(String(attribute(s, 'url.full'))).pathname)).toEqual(
      expect.arrayContaining(['/api/v1/validate', '/api/v2/validate_keys']),
    );

    // Probes make no span.
    expect(spans().some((s) => s.name.includes('healthz'))).toBe(false);

    // No secret, in any attribute of any span: not the API key, the tokens, the provider keys, the query string.
    const exported = receiver.exports.map((batch) => batch.raw).join('\n');
    for (const secret of [key.value, accessToken, admin.token, keys.api_key, keys.application_key, 'query-secret']) {
      expect(exported).not.toContain(secret);
    }
    expect(exported).not.toContain('note=');

    // The access line of the exchange carries its trace id.
    await waitFor('the access lines', () => server.output().includes(traceId));
    const access = server
      .output()
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as { msg?: string; traceId?: string; req?: { path?: string } })
      .filter((line) => line.msg === 'request completed');
    expect(access.find((line) => line.traceId === traceId)).toMatchObject({ req: { path: '/v1/token' } });
    expect(access.filter((line) => line.req?.path === '/v1/user-api-keys/' + key.id)[0].traceId).toBe(keyRead.traceId);
  }, 60_000);

  it('off unless configured: the whole application loads without one OpenTelemetry module, and the access log names no trace', async () => {
    const build = process.env[TEST_BUILD_DIR_VARIABLE]!;
    // main.ts's first import, then everything the application module pulls in. @opentelemetry/api does not count:
    // prom-client loads it anyway (for exemplars), and it does nothing without an SDK.
    const script = `require(${JSON.stringify(join(build, 'common/tracing-start'))}); require(${JSON.stringify(join(build, 'app.module'))});
      process.stdout.write(String(Object.keys(require.cache).filter((file) => /@opentelemetry\\/(?!api\\/)/.test(file)).length));`;
    const loaded = (env: Record<string, string>): Promise<number> =>
      new Promise((resolve, reject) => {
        const child = spawn(process.execPath, ['-e', script], { env: { PATH: process.env.PATH, ...env } });
        let out = '';
        child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
        child.once('exit', (code) => (code === 0 ? resolve(Number(out)) : reject(new Error(`exit ${code}`))));
      });
    expect(await loaded({})).toBe(0);
    expect(await loaded({ OTEL_TRACES_EXPORTER: 'none', OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url })).toBe(0);
    expect(await loaded({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url })).toBeGreaterThan(0);

    const plain = await startServer(database, {});
    try {
      expect((await fetch(`${plain.url}/v1/user-api-keys`)).status).toBe(401);
      await waitFor('the access line', () => plain.output().includes('/v1/user-api-keys'));
      expect(plain.output()).not.toContain('traceId');
    } finally {
      await plain.stop();
    }
  }, 60_000);

  it('refuses at start what it cannot honour: gRPC, or an unknown exporter, named in the message', async () => {
    const refusal = (env: Record<string, string>): Promise<{ code: number | null; output: string }> =>
      new Promise((resolve) => {
        const child = spawn(process.execPath, [join(process.env[TEST_BUILD_DIR_VARIABLE]!, 'main.js')], {
          env: { PATH: process.env.PATH, ...env },
        });
        let output = '';
        child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
        child.once('exit', (code) => resolve({ code, output }));
      });
    expect(await refusal({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' })).toEqual({
      code: 1,
      output: expect.stringContaining('OTEL_EXPORTER_OTLP_PROTOCOL must be http/protobuf or http/json'),
    });
    expect(await refusal({ OTEL_TRACES_EXPORTER: 'zipkin' })).toEqual({
      code: 1,
      output: expect.stringContaining('OTEL_TRACES_EXPORTER must be one of otlp, console, none'),
    });
  });
});
