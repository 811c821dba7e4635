import { spawn } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { NestFactory } from '@nestjs/core';
import request from 'supertest';
import { DataSource } from 'typeorm';
import { ApiKeyCodec } from '../../src/api-keys/api-key-codec';
import { ApiKeysService } from '../../src/api-keys/api-keys.service';
import { AppModule } from '../../src/app.module';
import { CredentialsValidator } from '../../src/integrations/credentials-validator';
import { MetricsServer } from '../../src/metrics/metrics.server';
import { FakeDatadog } from '../support/fakes/fake-datadog';
import { apiKeyAuth, bearer, expectApiKeyRejected, expectError } from '../support/http-assertions';
import { waitFor } from '../support/wait';
import { datadogKeys, resetFakeDatadog, startWithFakeDatadog } from '../support/monitoring';
import { testBuildDirectory } from '../support/build-directory';
import { declaredRoutes } from '../support/routes';
import { createTestApp, createTestDatabase, DATABASE_KIND, TestApp, testEnvironment } from '../support/test-app';
import { findBinary, withTool } from '../support/tools';

/**
 * Prometheus metrics (docs/operations.md#metrics): served on a listener of their own (METRICS_HOST:METRICS_PORT,
 * here a free port), never on the public port; what they count after real requests.
 */

/** One sample of the text format: `name{label="value",...} number`. */
interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

function parseSamples(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (match === null) throw new Error(`not a sample line: ${line}`);
    const labels: Record<string, string> = {};
    for (const [, name, value] of (match[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) {
      labels[name] = value;
    }
    samples.push({ name: match[1], labels, value: Number(match[3]) });
  }
  return samples;
}

const PROMTOOL = findBinary(['/usr/bin/promtool', '/usr/local/bin/promtool'], ['--version']);
const withPromtool = withTool(
  it,
  PROMTOOL !== undefined,
  'promtool',
  'apt-get install --no-install-recommends prometheus',
);

/** Runs Debian's `promtool` (package prometheus, installed by .ci/run): its exit code and what it printed. */
function promtool(args: string[], stdin?: string): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn('promtool', args, { stdio: ['pipe', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.on('error', (error) =>
      reject(new Error(`promtool not found (apt-get install prometheus): ${error.message}`)),
    );
    child.on('close', (code) => resolve({ code, output }));
    child.stdin.end(stdin ?? '');
  });
}

function metricsUrl(t: TestApp): string {
  const address = t.get(MetricsServer).address();
  if (address === undefined) throw new Error('the metrics listener is not listening');
  return `http://${address.address}:${address.port}`;
}

async function scrape(t: TestApp): Promise<Sample[]> {
  const response = await request(metricsUrl(t)).get('/metrics').expect(200);
  return parseSamples(response.text);
}

/** The value of the sample `name` whose labels include `labels`; 0 when there is none yet. */
function valueOf(samples: Sample[], name: string, labels: Record<string, string> = {}): number {
  const found = samples.filter(
    (sample) => sample.name === name && Object.entries(labels).every(([key, value]) => sample.labels[key] === value),
  );
  if (found.length > 1) throw new Error(`${name} ${JSON.stringify(labels)} matches ${found.length} samples`);
  return found[0]?.value ?? 0;
}

/** How much each of `queries` grew while `run` ran. */
async function growth(
  t: TestApp,
  queries: Array<[name: string, labels?: Record<string, string>]>,
  run: () => Promise<unknown>,
): Promise<number[]> {
  const before = await scrape(t);
  await run();
  const after = await scrape(t);
  return queries.map(([name, labels]) => valueOf(after, name, labels) - valueOf(before, name, labels));
}

const EXCHANGES = 'gatehouse_token_exchanges_total';
const REFUSALS = 'gatehouse_rate_limit_refusals_total';
const REQUESTS = 'gatehouse_http_request_duration_seconds_count';

/** A client address of its own for each use (TRUST_PROXY=loopback), so that failure counts are never shared. */
let lastAddress = 0;
const nextAddress = (): string => `10.77.0.${(lastAddress += 1)}`;

describe('metrics (e2e)', () => {
  describe('the listener', () => {
    let t: TestApp;
    beforeAll(async () => {
      t = await createTestApp({
        env: {
          TRUST_PROXY: 'loopback',
          TOKEN_FAILURE_LIMIT_PER_MINUTE: '2',
          EXPOSED_REPORTS_PER_HOUR: '1',
          EXPOSED_REPORT_MIN_RESPONSE_MS: '0',
          CONSOLE_SIGN_IN_FAILURE_LIMIT_PER_MINUTE: '1',
        },
      });
    });
    afterAll(() => t.close());

    it('serves gatehouse_ metrics in the Prometheus text format on METRICS_HOST (127.0.0.1), Node process metrics included', async () => {
      expect(t.get(MetricsServer).address()).toMatchObject({ address: '127.0.0.1', family: 'IPv4' });
      expect(t.get(MetricsServer).address()!.port).not.toBe(0);
      await t.http().get('/healthz').expect(200);

      const response = await request(metricsUrl(t)).get('/metrics');
      expect(response.status).toBe(200);
      expect(response.headers['content-type']).toBe('text/plain; version=0.0.4; charset=utf-8');
      expect(response.text).toContain('# TYPE gatehouse_http_request_duration_seconds histogram\n');
      expect(response.text).toContain('# TYPE gatehouse_token_exchanges_total counter\n');
      expect(response.text).toContain('# TYPE gatehouse_rate_limit_refusals_total counter\n');
      expect(response.text).toContain('# TYPE gatehouse_provider_calls_total counter\n');
      const samples = parseSamples(response.text);
      const names = new Set(samples.map((sample) => sample.name));
      // Node's process metrics under the names Node.js dashboards and alerts use; the application's own under gatehouse_.
      for (const name of [
        'process_cpu_seconds_total',
        'process_cpu_user_seconds_total',
        'process_resident_memory_bytes',
        'nodejs_heap_size_used_bytes',
        'nodejs_eventloop_lag_seconds',
        'nodejs_eventloop_lag_p99_seconds',
        'nodejs_active_handles',
      ]) {
        expect(names).toContain(name);
      }
      expect([...names].filter((name) => /^gatehouse_(process|nodejs)_/.test(name))).toEqual([]);
      expect([...names].filter((name) => !/^(gatehouse_|process_|nodejs_)/.test(name))).toEqual([]);
      expect(valueOf(samples, REQUESTS, { method: 'GET', route: '/healthz', status_code: '200' })).toBeGreaterThan(0);
      // Every limiter is there from the start, at 0, so that rate() sees its first refusal.
      for (const limiter of [
        'token_failures',
        'validations_per_organization',
        'validations_concurrent',
        'exposed_reports',
        'console_sign_in_failures',
      ]) {
        expect(samples).toContainEqual({ name: REFUSALS, labels: { limiter }, value: 0 });
      }
    });

    withPromtool(
      'the whole scrape passes `promtool check metrics` (Prometheus 2 lint) with nothing to say',
      async () => {
        await t.http().get('/healthz').expect(200);
        await t.http().post('/v1/token').expect(401);
        const scrape = (await request(metricsUrl(t)).get('/metrics').expect(200)).text;
        const result = await promtool(['check', 'metrics'], scrape);
        expect(result).toEqual({ code: 0, output: '' });
      },
    );

    withPromtool(
      "the docs' scrape configuration and alert rules pass `promtool check config` and `check rules`",
      async () => {
        const operations = readFileSync(join(__dirname, '..', '..', 'docs', 'operations.md'), 'utf8');
        const blocks = [...operations.matchAll(/^```yaml\n([\s\S]*?)^```$/gm)].map((match) => match[1]);
        const scrape = blocks.find((block) => block.startsWith('scrape_configs:'));
        const rules = blocks.find((block) => block.startsWith('groups:'));
        expect({ scrape: scrape !== undefined, rules: rules !== undefined }).toEqual({ scrape: true, rules: true });
        const dir = mkdtempSync(join(tmpdir(), 'gatehouse-promtool-'));
        try {
          writeFileSync(join(dir, 'rules.yml'), rules!);
          writeFileSync(join(dir, 'prometheus.yml'), `${scrape}rule_files: ['rules.yml']\n`);
          const rulesCheck = await promtool(['check', 'rules', join(dir, 'rules.yml')]);
          expect({ code: rulesCheck.code, output: rulesCheck.output }).toMatchObject({ code: 0 });
          expect(rulesCheck.output).toMatch(/SUCCESS: 6 rules found/);
          const configCheck = await promtool(['check', 'config', join(dir, 'prometheus.yml')]);
          expect({ code: configCheck.code, output: configCheck.output }).toMatchObject({ code: 0 });
        } finally {
          rmSync(dir, { recursive: true, force: true });
        }
      },
    );

    it('answers nothing else: another path or method is 404 JSON', async () => {
      const other = await request(metricsUrl(t)).get('/');
      expectError(other, 404, 'NOT_FOUND', 'route not found', 'route_not_found');
      const post = await request(metricsUrl(t)).post('/metrics');
      expectError(post, 404, 'NOT_FOUND', 'route not found', 'route_not_found');
    });

    it('is not served on the public port: GET /metrics there is the usual 404 JSON', async () => {
      expectError(await t.http().get('/metrics'), 404, 'NOT_FOUND', 'route not found', 'route_not_found');
    });

    it('counts token exchanges by outcome: success, and each refusal by its reason', async () => {
      const user = await t.user();
      const key = await t.createKey(user);
      const revoked = await t.createKey(user);
      await t.http().delete(`/v1/user-api-keys/${revoked.id}`).set(bearer(user.token)).expect(200);
      const exchange = (headers: Record<string, string> = {}) =>
        t.http().post('/v1/token').set('X-Forwarded-For', nextAddress()).set(headers);
      const codec = t.get(ApiKeysService).codec;

      const grown = await growth(
        t,
        [
          [EXCHANGES, { outcome: 'success' }],
          [EXCHANGES, { outcome: 'missing_header' }],
          [EXCHANGES, { outcome: 'wrong_scheme' }],
          [EXCHANGES, { outcome: 'malformed_key' }],
          [EXCHANGES, { outcome: 'invalid_credentials' }],
          [EXCHANGES, { outcome: 'revoked' }],
          [REQUESTS, { method: 'POST', route: '/v1/token', status_code: '200' }],
          [REQUESTS, { method: 'POST', route: '/v1/token', status_code: '401' }],
        ],
        async () => {
          await exchange(apiKeyAuth(key.value)).expect(200);
          await exchange(apiKeyAuth(key.value)).expect(200);
          expectApiKeyRejected(await exchange(), 'authorization header required', 'authorization_header_missing');
          expectApiKeyRejected(
            await exchange(bearer('x')),
            'authorization header must use ApiKey scheme',
            'authorization_scheme_not_api_key',
          );
          expectApiKeyRejected(await exchange(apiKeyAuth('nope')), 'api key invalid', 'api_key_malformed');
          const forged = codec.format(randomUUID(), ApiKeyCodec.newSecret());
          expectApiKeyRejected(
            await exchange(apiKeyAuth(forged)),
            'invalid api key credentials',
            'api_key_invalid_credentials',
          );
          expectApiKeyRejected(await exchange(apiKeyAuth(revoked.value)), 'api key revoked', 'api_key_revoked');
        },
      );
      expect(grown).toEqual([2, 1, 1, 1, 1, 1, 2, 5]);
    });

    it('counts a 429 by its limiter, and the exchange as rate_limited', async () => {
      const address = nextAddress();
      const fail = () => t.http().post('/v1/token').set('X-Forwarded-For', address).set(apiKeyAuth('nope'));
      const grown = await growth(
        t,
        [
          [REFUSALS, { limiter: 'token_failures' }],
          [EXCHANGES, { outcome: 'rate_limited' }],
          [EXCHANGES, { outcome: 'malformed_key' }],
          [REQUESTS, { method: 'POST', route: '/v1/token', status_code: '429' }],
        ],
        async () => {
          await fail().expect(401);
          await fail().expect(401);
          await fail().expect(429);
          await fail().expect(429);
        },
      );
      expect(grown).toEqual([2, 2, 2, 2]);
    });

    // The report limit answers before the body is read, so before routing: its 429s are `unmatched`.
    it.each([
      [
        'a report of exposed keys',
        'exposed_reports',
        '/v1/api-keys/exposed',
        () => ({ keys: ['not a key'] }),
        202,
        'unmatched',
      ],
      [
        'a console sign-in',
        'console_sign_in_failures',
        '/v1/console/sessions',
        () => ({ code: randomBytes(32).toString('base64url') }),
        401,
        '/v1/console/sessions',
      ],
    ])(
      'counts %s refused by its limit under its own limiter (%s)',
      async (_name, limiter, route, body, first, label) => {
        const address = nextAddress();
        const send = () => t.http().post(route).set('X-Forwarded-For', address).send(body());
        const grown = await growth(
          t,
          [
            [REFUSALS, { limiter }],
            [REQUESTS, { method: 'POST', route: label, status_code: '429' }],
          ],
          async () => {
            await send().expect(first);
            await send().expect(429);
          },
        );
        expect(grown).toEqual([1, 1]);
      },
    );

    it('labels requests with the route template, never the raw path; a request no route answers is "unmatched"', async () => {
      const user = await t.user();
      const key = await t.createKey(user);
      const grown = await growth(
        t,
        [
          [REQUESTS, { method: 'GET', route: '/v1/user-api-keys/:id', status_code: '200' }],
          [REQUESTS, { method: 'GET', route: '/v1/user-api-keys/:id', status_code: '404' }],
          [REQUESTS, { method: 'GET', route: '/v1/user-api-keys/:id', status_code: '401' }],
          [REQUESTS, { method: 'GET', route: 'unmatched', status_code: '404' }],
        ],
        async () => {
          await t.http().get(`/v1/user-api-keys/${key.id}`).set(bearer(user.token)).expect(200);
          await t.http().get(`/v1/user-api-keys/${randomUUID()}`).set(bearer(user.token)).expect(404);
          await t.http().get(`/v1/user-api-keys/${key.id}`).expect(401);
          await t.http().get(`/no/such/route/${key.id}`).expect(404);
        },
      );
      expect(grown).toEqual([1, 1, 1, 1]);
      const text = (await request(metricsUrl(t)).get('/metrics')).text;
      expect(text).not.toContain(key.id);
      expect(text).not.toContain('/no/such/route');
      const buckets = parseSamples(text).filter(
        (sample) =>
          sample.name === 'gatehouse_http_request_duration_seconds_bucket' &&
          sample.labels.method === 'GET' &&
          sample.labels.route === '/v1/user-api-keys/:id' &&
          sample.labels.status_code === '200',
      );
      expect(buckets.map((sample) => sample.labels.le)).toEqual([
        ...['0.001', '0.0025', '0.005', '0.01', '0.025', '0.05', '0.1', '0.25', '0.5', '1', '2.5', '5', '10', '20'],
        '+Inf',
      ]);
      expect(buckets.at(-1)!.value).toBeGreaterThanOrEqual(1);
      // A template with a wildcard is taken for Nest's middleware route, not an endpoint: no controller declares one.
      expect(declaredRoutes(t).filter(({ route }) => route.includes('*'))).toEqual([]);
    });

    it(
      DATABASE_KIND === 'postgres'
        ? 'reports the PostgreSQL pool: connections in use, requests waiting, pool size'
        : 'has no pool gauges on SQLite (one connection, no pool)',
      async () => {
        const pool = (samples: Sample[]) => samples.filter((sample) => sample.name.startsWith('gatehouse_db_pool_'));
        if (DATABASE_KIND === 'sqlite') {
          expect(pool(await scrape(t))).toEqual([]);
          return;
        }
        expect(pool(await scrape(t)).map((sample) => sample.name)).toEqual([
          'gatehouse_db_pool_connections_in_use',
          'gatehouse_db_pool_waiting_requests',
          'gatehouse_db_pool_max_connections',
        ]);
        // Every connection of the pool held (by query runners, as transactions hold them), and one more asked for.
        const runners = Array.from({ length: 10 }, () => t.get(DataSource).createQueryRunner());
        try {
          await Promise.all(runners.map((runner) => runner.connect()));
          const waiting = t.get(DataSource).query('SELECT 1');
          const held = await waitFor('a statement waiting for a connection', async () => {
            const scraped = await scrape(t);
            return valueOf(scraped, 'gatehouse_db_pool_waiting_requests') >= 1 && scraped;
          });
          expect(valueOf(held, 'gatehouse_db_pool_connections_in_use')).toBe(10);
          // Ours, and a background statement of the app's own (the feed, the usage recorder) may be waiting beside it.
          expect(valueOf(held, 'gatehouse_db_pool_waiting_requests')).toBeGreaterThanOrEqual(1);
          expect(valueOf(held, 'gatehouse_db_pool_max_connections')).toBe(10);
          await runners.pop()!.release();
          await waiting;
        } finally {
          await Promise.all(runners.map((runner) => runner.release()));
        }
        const released = await scrape(t);
        expect(valueOf(released, 'gatehouse_db_pool_waiting_requests')).toBe(0);
        expect(valueOf(released, 'gatehouse_db_pool_connections_in_use')).toBeLessThan(10);
      },
    );
  });

  describe('the provider and validation limits', () => {
    let fake: FakeDatadog;
    let t: TestApp;
    const keys = datadogKeys('metrics');
    const config = { ...keys, site: 'datadoghq.com' };

    beforeAll(async () => {
      ({ fake, t } = await startWithFakeDatadog({ MONITORING_VALIDATIONS_PER_MINUTE: '1' }));
    });
    afterAll(async () => {
      await t.close();
      await fake.close();
    });
    beforeEach(() => resetFakeDatadog(fake, keys));

    const PROVIDER = 'gatehouse_provider_calls_total';

    it('counts provider calls by check and outcome, and a validation refused by its per-organization limit', async () => {
      const admin = await t.user({ org: 'metrics-provider', role: 'admin' });
      fake.fail('/api/v1/monitor', { status: 500 });
      fake.fail('/api/v1/slo', { status: 403 });
      const validate = () =>
        t.http().post('/v1/notification-integrations/monitoring/validate').set(bearer(admin.token)).send(config);
      const grown = await growth(
        t,
        [
          [PROVIDER, { check: 'validate_api_key', outcome: 'ok' }],
          [PROVIDER, { check: 'validate_keys', outcome: 'ok' }],
          [PROVIDER, { check: 'monitors_read', outcome: 'unavailable' }],
          [PROVIDER, { check: 'slos_read', outcome: 'denied' }],
          [PROVIDER, { check: 'dashboards_read', outcome: 'ok' }],
          [PROVIDER, { check: 'owner_permissions', outcome: 'ok' }],
          [REFUSALS, { limiter: 'validations_per_organization' }],
          [
            REQUESTS,
            { method: 'POST', route: '/v1/notification-integrations/monitoring/validate', status_code: '429' },
          ],
        ],
        async () => {
          await validate().expect(200);
          await validate().expect(429);
        },
      );
      expect(grown).toEqual([1, 1, 1, 1, 1, 1, 1, 1]);
      // Three tries of the failing probe are one call.
      expect(fake.callsTo('/api/v1/monitor')).toHaveLength(3);
    });

    it('observes a request the client gave up on with status_code "aborted"', async () => {
      const admin = await t.user({ org: 'metrics-aborted', role: 'admin' });
      fake.delay('/api/v1/validate', 300);
      const route = '/v1/notification-integrations/monitoring/validate';
      const validations = jest.spyOn(t.get(CredentialsValidator), 'validate');
      const grown = await growth(
        t,
        [
          [REQUESTS, { method: 'POST', route, status_code: 'aborted' }],
          [REQUESTS, { method: 'POST', route, status_code: '200' }],
        ],
        async () => {
          const gaveUp = t.http().post(route).set(bearer(admin.token)).send(config).timeout(100);
          await expect(gaveUp).rejects.toThrow(/Timeout/);
          // The validation goes on without its client: its end is awaited, so that its answer would have been counted.
          await waitFor('the validation started', () => validations.mock.results.length === 1);
          await expect(validations.mock.results[0].value).resolves.toMatchObject({ can_save: true });
        },
      );
      validations.mockRestore();
      expect(grown).toEqual([1, 0]);
    });
  });

  describe('lifecycle', () => {
    it('binds METRICS_HOST: on 127.0.0.2 it does not answer on 127.0.0.1', async () => {
      const t = await createTestApp({ env: { METRICS_HOST: '127.0.0.2' } });
      try {
        const { address, port } = t.get(MetricsServer).address()!;
        expect(address).toBe('127.0.0.2');
        await request(`http://127.0.0.2:${port}`).get('/metrics').expect(200);
        await expect(request(`http://127.0.0.1:${port}`).get('/metrics')).rejects.toThrow(/ECONNREFUSED/);
      } finally {
        await t.close();
      }
    });

    it('closes with the app, and two apps in one process count apart', async () => {
      const a = await createTestApp();
      const b = await createTestApp();
      const urlA = metricsUrl(a);
      try {
        expect(metricsUrl(b)).not.toBe(urlA);
        await a.http().get('/healthz').expect(200);
        await a.http().get('/healthz').expect(200);
        await b.http().get('/healthz').expect(200);
        const healthz = { method: 'GET', route: '/healthz', status_code: '200' };
        expect(valueOf(await scrape(a), REQUESTS, healthz)).toBe(2);
        expect(valueOf(await scrape(b), REQUESTS, healthz)).toBe(1);
      } finally {
        await a.close();
      }
      try {
        await expect(request(urlA).get('/metrics')).rejects.toThrow(/ECONNREFUSED/);
        expect(a.get(MetricsServer).address()).toBeUndefined();
        await request(metricsUrl(b)).get('/metrics').expect(200);
      } finally {
        await b.close();
      }
    });

    it('METRICS_PORT=off: no listener, the API unchanged', async () => {
      const t = await createTestApp({ env: { METRICS_PORT: 'off' } });
      try {
        expect(t.get(MetricsServer).address()).toBeUndefined();
        await t.http().get('/healthz').expect(200);
      } finally {
        await t.close();
      }
    });

    it('an application context without HTTP (the admin CLI) opens no metrics port', async () => {
      const database = createTestDatabase();
      const app = await NestFactory.createApplicationContext(
        AppModule.forRoot({ env: testEnvironment(database), workerDirectory: testBuildDirectory() }),
        {
          logger: false,
        },
      );
      try {
        expect(app.get(MetricsServer).address()).toBeUndefined();
      } finally {
        await app.close();
        await database.drop();
      }
    });
  });
});
