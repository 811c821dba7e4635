import { FakeDatadog } from '../../test/support/fakes/fake-datadog';
import { DatadogAdapter, mapWithConcurrency } from './datadog.adapter';
import { Deadline, DeadlineExceededError } from './deadline';
import { MonitoringCredentials, ProviderUnavailableError } from './monitoring-provider.port';
import { PERMISSION_NAMES } from './permission-catalogue';
import { ProviderHttpClient } from './provider-http-client';

const credentials: MonitoringCredentials = {
  apiKey: 'a'.repeat(32),
  applicationKey: 'b'.repeat(40),
  site: 'datadoghq.eu',
};

describe('DatadogAdapter', () => {
  let fake: FakeDatadog;
  let logged: Array<[string, Record<string, unknown>]>;
  let adapter: DatadogAdapter;

  beforeAll(async () => {
    fake = await FakeDatadog.start();
  });
  afterAll(() => fake.close());
  beforeEach(() => {
    fake.reset();
    fake.rateLimitResetSeconds = 0;
    logged = [];
    adapter = new DatadogAdapter(new ProviderHttpClient({ timeoutMs: 1000, maxRetries: 2, maxRetryWaitMs: 20 }), {
      baseUrlOverride: fake.url,
      concurrency: 3,
      log: (message, context) => logged.push([message, context]),
    });
  });

  describe('checkKeys', () => {
    it('Working after /api/v1/validate and /api/v2/validate_keys, with the keys as headers', async () => {
      expect(await adapter.checkKeys(credentials)).toBe('Working');
      expect(fake.calls.map((c) => `${c.method} ${c.path}`)).toEqual([
        'GET /api/v1/validate',
        'GET /api/v2/validate_keys',
      ]);
      for (const call of fake.calls) {
        expect(call.headers['dd-api-key']).toBe(credentials.apiKey);
        expect(call.headers['dd-application-key']).toBe(credentials.applicationKey);
        expect(call.headers.accept).toBe('application/json');
        expect(call.query).toEqual({});
      }
    });

    it('Invalid when the API key is refused, without asking further', async () => {
      fake.acceptKeys({ apiKeys: ['other'] });
      expect(await adapter.checkKeys(credentials)).toBe('Invalid');
      expect(fake.calls.map((c) => c.path)).toEqual(['/api/v1/validate']);
    });

    it('Invalid when the application key is refused', async () => {
      fake.acceptKeys({ applicationKeys: ['other'] });
      expect(await adapter.checkKeys(credentials)).toBe('Invalid');
      expect(fake.calls.map((c) => c.path)).toEqual(['/api/v1/validate', '/api/v2/validate_keys']);
    });

    it.each([401, 403])('%i on validate_keys is Invalid', async (status) => {
      fake.fail('/api/v2/validate_keys', { status });
      expect(await adapter.checkKeys(credentials)).toBe('Invalid');
    });

    it('200 {"valid": false} is Invalid', async () => {
      fake.fail('/api/v1/validate', { status: 200, body: { valid: false } });
      expect(await adapter.checkKeys(credentials)).toBe('Invalid');
    });

    it.each([
      ['/api/v1/validate', 500],
      ['/api/v1/validate', 429],
      ['/api/v2/validate_keys', 503],
      ['/api/v1/validate', 404],
      ['/api/v1/validate', 302],
    ])('%s answering %i for good: unavailable', async (path, status) => {
      fake.fail(path, { status });
      await expect(adapter.checkKeys(credentials)).rejects.toBeInstanceOf(ProviderUnavailableError);
    });

    it('a 5xx then a 200 is retried through', async () => {
      fake.fail('/api/v1/validate', { status: 502, times: 2 });
      expect(await adapter.checkKeys(credentials)).toBe('Working');
      expect(fake.callsTo('/api/v1/validate')).toHaveLength(3);
    });

    it('a slow provider is unavailable', async () => {
      fake.delay('/api/v2/validate_keys', 4000);
      await expect(adapter.checkKeys(credentials)).rejects.toBeInstanceOf(ProviderUnavailableError);
    });

    it.each(['has space', 'tab\tkey', 'ключ', 'new\nline', ''])(
      'a key that cannot be a header (%j) is Invalid unsent',
      async (bad) => {
        expect(await adapter.checkKeys({ ...credentials, apiKey: bad })).toBe('Invalid');
        expect(await adapter.checkKeys({ ...credentials, applicationKey: bad })).toBe('Invalid');
        expect(fake.calls).toEqual([]);
      },
    );
  });

  describe('checkPermissions', () => {
    it('all granted with the fake defaults, through read-only calls, each endpoint once', async () => {
      const statuses = await adapter.checkPermissions(credentials);
      expect([...statuses.keys()].sort()).toEqual([...PERMISSION_NAMES].sort());
      expect([...statuses.values()].every((s) => s === 'Granted')).toBe(true);
      expect(fake.calls.every((c) => c.method === 'GET')).toBe(true);
      expect(fake.calls.map((c) => c.path).sort()).toEqual(
        [
          '/api/v1/dashboard',
          '/api/v1/logs/config/indexes',
          '/api/v1/metrics',
          '/api/v1/monitor',
          '/api/v1/notebooks',
          '/api/v1/query',
          '/api/v1/slo',
          '/api/v1/usage/summary',
          '/api/v2/audit/events',
          '/api/v2/current_user',
          '/api/v2/logs/config/archives',
          '/api/v2/logs/events',
        ].sort(),
      );
      expect(logged).toEqual([]);
    });

    it('403 is Missing, for endpoint and owner checks alike', async () => {
      fake.revoke('slos_read', 'logs_live_tail', 'usage_read');
      const statuses = await adapter.checkPermissions(credentials);
      expect(statuses.get('slos_read')).toBe('Missing');
      expect(statuses.get('logs_live_tail')).toBe('Missing');
      expect(statuses.get('usage_read')).toBe('Missing');
      expect(statuses.get('logs_read_index_data')).toBe('Granted');
    });

    it.each([429, 500, 503, 400, 404, 401, 302])('%i on a probe is Unknown, never Missing', async (status) => {
      fake.fail('/api/v1/monitor', { status, headers: { 'X-RateLimit-Reset': '0' } });
      const statuses = await adapter.checkPermissions(credentials);
      expect(statuses.get('monitors_read')).toBe('Unknown');
      expect(logged).toEqual([
        [
          'permission check unknown',
          expect.objectContaining({ permission: 'monitors_read', path: '/api/v1/monitor', outcome: `HTTP ${status}` }),
        ],
      ]);
      if (status === 400) expect(logged[0][1].bug).toBe(true);
    });

    it('a timeout is Unknown', async () => {
      fake.delay('/api/v1/slo', 4000);
      expect((await adapter.checkPermissions(credentials)).get('slos_read')).toBe('Unknown');
    });

    it('a rate limit that clears is Granted', async () => {
      fake.fail('/api/v1/dashboard', { status: 429, times: 2 });
      expect((await adapter.checkPermissions(credentials)).get('dashboards_read')).toBe('Granted');
      expect(fake.callsTo('/api/v1/dashboard')).toHaveLength(3);
    });

    it('current_user failing makes the three owner checks Unknown', async () => {
      fake.fail('/api/v2/current_user', { status: 500 });
      const statuses = await adapter.checkPermissions(credentials);
      for (const name of ['logs_live_tail', 'logs_read_index_data', 'usage_notifications_read']) {
        expect(statuses.get(name)).toBe('Unknown');
      }
      expect(statuses.get('logs_read_config')).toBe('Granted');
    });

    it('current_user without an included list is Unknown, not Missing', async () => {
      fake.fail('/api/v2/current_user', { status: 200, body: { data: {} } });
      expect((await adapter.checkPermissions(credentials)).get('logs_live_tail')).toBe('Unknown');
    });

    it('sends the query parameters Datadog needs', async () => {
      await adapter.checkPermissions(credentials);
      expect(fake.callsTo('/api/v2/logs/events')[0].query).toEqual({ 'page[limit]': '1', 'filter[from]': 'now-15m' });
      expect(fake.callsTo('/api/v1/usage/summary')[0].query.start_month).toMatch(/^\d{4}-\d{2}$/);
    });
  });

  it('calls https://api.<site> from the table when no override is configured', async () => {
    const urls: string[] = [];
    const fetchStub = ((url: URL) => {
      urls.push(url.toString());
      return Promise.resolve(new Response('{"valid":true}', { status: 200 }));
    }) as unknown as typeof fetch;
    const direct = new DatadogAdapter(
      new ProviderHttpClient({ timeoutMs: 100, maxRetries: 0, maxRetryWaitMs: 0, fetch: fetchStub }),
      { concurrency: 1 },
    );
    await direct.checkKeys({ ...credentials, site: 'us3.datadoghq.com' });
    expect(urls).toEqual([
      'https://api.us3.datadoghq.com/api/v1/validate',
      'https://api.us3.datadoghq.com/api/v2/validate_keys',
    ]);
  });
});

describe('DatadogAdapter onCall (gatehouse_provider_calls_total)', () => {
  const answer = (status: number, body = ''): Promise<Response> => Promise.resolve(new Response(body, { status }));

  it('reports each call once, retries included, by check and outcome', async () => {
    const reported: string[] = [];
    const fetchStub = ((url: URL) => {
      switch (url.pathname) {
        case '/api/v1/validate':
          return answer(200, '{"valid":true}');
        case '/api/v1/monitor':
          return answer(503);
        case '/api/v1/slo':
          return answer(403);
        case '/api/v1/dashboard':
          return answer(404);
        case '/api/v1/notebooks':
          return Promise.reject(Object.assign(new Error('timed out'), { name: 'TimeoutError' }));
        case '/api/v1/metrics':
          return Promise.reject(new TypeError('fetch failed'));
        default:
          return answer(200, '{}');
      }
    }) as unknown as typeof fetch;
    const adapter = new DatadogAdapter(
      new ProviderHttpClient({ timeoutMs: 100, maxRetries: 1, maxRetryWaitMs: 0, fetch: fetchStub }),
      { concurrency: 2, onCall: (check, outcome) => reported.push(`${check} ${outcome}`) },
    );
    await adapter.checkKeys(credentials);
    await adapter.checkPermissions(credentials);
    expect(reported.sort()).toEqual([
      'audit_logs_read ok',
      'dashboards_read unexpected',
      'logs_read_archives ok',
      'logs_read_config ok',
      'logs_read_data ok',
      'metrics_read network_error',
      'monitors_read unavailable',
      'notebooks_read timeout',
      'owner_permissions ok',
      'slos_read denied',
      'timeseries_query ok',
      'usage_read ok',
      'validate_api_key ok',
      'validate_keys ok',
    ]);
  });

  it('reports a call the validation deadline aborted as deadline_exceeded', async () => {
    const reported: string[] = [];
    const hang = ((_url: URL, init: RequestInit) =>
      new Promise((_resolve, reject) =>
        init.signal!.addEventListener('abort', () => reject(init.signal!.reason as Error)),
      )) as unknown as typeof fetch;
    const adapter = new DatadogAdapter(
      new ProviderHttpClient({ timeoutMs: 5000, maxRetries: 0, maxRetryWaitMs: 0, fetch: hang }),
      { concurrency: 1, onCall: (check, outcome) => reported.push(`${check} ${outcome}`) },
    );
    const deadline = new Deadline(20);
    try {
      await expect(adapter.checkKeys(credentials, deadline)).rejects.toBeInstanceOf(DeadlineExceededError);
    } finally {
      deadline.clear();
    }
    expect(reported).toEqual(['validate_api_key deadline_exceeded']);
  });
});

describe('mapWithConcurrency', () => {
  it('keeps at most `limit` in flight and the results in order', async () => {
    let inFlight = 0;
    let peak = 0;
    const results = await mapWithConcurrency([5, 1, 4, 2, 3, 0, 6], 3, async (n) => {
      inFlight += 1;
      peak = Math.max(peak, inFlight);
      await new Promise((resolve) => setTimeout(resolve, n));
      inFlight -= 1;
      return n * 10;
    });
    expect(results).toEqual([50, 10, 40, 20, 30, 0, 60]);
    expect(peak).toBe(3);
  });

  it('handles an empty list', async () => {
    expect(await mapWithConcurrency([], 4, () => Promise.resolve(1))).toEqual([]);
  });

  it('starts no further item after one rejects (a passed deadline)', async () => {
    const started: number[] = [];
    const run = mapWithConcurrency([0, 1, 2, 3, 4, 5], 2, async (n) => {
      started.push(n);
      await new Promise((resolve) => setTimeout(resolve, 5));
      if (n === 0) throw new Error('deadline');
      return n;
    });
    await expect(run).rejects.toThrow('deadline');
    await new Promise((resolve) => setTimeout(resolve, 30));
    expect(started).toEqual([0, 1]);
  });
});
