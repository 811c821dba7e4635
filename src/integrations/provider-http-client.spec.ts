import { createServer, Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Deadline, DeadlineExceededError } from './deadline';
import { ProviderHttpClient, ProviderHttpOptions, retryDelayMs } from './provider-http-client';

type Answer = { status: number; headers?: Record<string, string>; body?: string } | Error;

/** A fetch that answers from a script and records what it was asked. */
function scriptedFetch(answers: Answer[]): { fetch: typeof fetch; calls: RequestInit[] } {
  const calls: RequestInit[] = [];
  const fetchStub = (_url: unknown, init?: RequestInit): Promise<Response> => {
    calls.push(init ?? {});
    const answer = answers.shift() ?? { status: 200, body: '{}' };
    if (answer instanceof Error) return Promise.reject(answer);
    return Promise.resolve(new Response(answer.body ?? '{}', { status: answer.status, headers: answer.headers }));
  };
  return { fetch: fetchStub, calls };
}

function client(answers: Answer[], options: Partial<ProviderHttpOptions> = {}) {
  const { fetch, calls } = scriptedFetch(answers);
  const sleeps: number[] = [];
  const http = new ProviderHttpClient({
    timeoutMs: 1000,
    maxRetries: 2,
    maxRetryWaitMs: 5000,
    baseBackoffMs: 100,
    fetch,
    sleep: (ms) => {
      sleeps.push(ms);
      return Promise.resolve();
    },
    now: () => Date.parse('2026-01-01T00:00:00.000Z'),
    ...options,
  });
  const get = (deadline?: Deadline) =>
    http.get({ url: new URL('https://api.example.test/x'), headers: { A: 'b' }, readBody: true, deadline });
  return { get, calls, sleeps };
}

describe('ProviderHttpClient', () => {
  it('sends a GET with the headers, no redirects and a timeout signal', async () => {
    const { get, calls } = client([{ status: 200, body: '{"valid":true}' }]);
    expect(await get()).toEqual({
      kind: 'answered',
      status: 200,
      body: { valid: true },
      headers: expect.anything(),
      attempts: 1,
    });
    expect(calls).toHaveLength(1);
    expect(calls[0]).toMatchObject({ method: 'GET', headers: { A: 'b' }, redirect: 'manual' });
    expect(calls[0].signal).toBeInstanceOf(AbortSignal);
  });

  it.each([400, 401, 403, 404])('does not retry %i', async (status) => {
    const { get, calls } = client([{ status }]);
    expect(await get()).toMatchObject({ kind: 'answered', status, attempts: 1 });
    expect(calls).toHaveLength(1);
  });

  it('retries a 429 after the X-RateLimit-Reset seconds, then succeeds', async () => {
    const { get, calls, sleeps } = client([{ status: 429, headers: { 'X-RateLimit-Reset': '2' } }, { status: 200 }]);
    expect(await get()).toMatchObject({ kind: 'answered', status: 200, attempts: 2 });
    expect(calls).toHaveLength(2);
    expect(sleeps).toEqual([2000]);
  });

  it('honours Retry-After in seconds and as a date', async () => {
    const { get, sleeps } = client([
      { status: 503, headers: { 'Retry-After': '3' } },
      { status: 429, headers: { 'Retry-After': 'Thu, 01 Jan 2026 00:00:04 GMT' } },
      { status: 200 },
    ]);
    expect(await get()).toMatchObject({ status: 200, attempts: 3 });
    expect(sleeps).toEqual([3000, 4000]);
  });

  it('backs off exponentially without a hint, capped', async () => {
    const { get, sleeps } = client([{ status: 500 }, { status: 502 }, { status: 200 }], { maxRetryWaitMs: 150 });
    expect(await get()).toMatchObject({ status: 200, attempts: 3 });
    expect(sleeps).toEqual([100, 150]);
  });

  it('stops after maxRetries and hands back the last answer', async () => {
    const { get, calls } = client([{ status: 503 }, { status: 503 }, { status: 503 }, { status: 200 }]);
    expect(await get()).toMatchObject({ kind: 'answered', status: 503, attempts: 3 });
    expect(calls).toHaveLength(3);
  });

  it('does not wait when the provider asks for longer than the cap', async () => {
    const { get, calls, sleeps } = client([{ status: 429, headers: { 'X-RateLimit-Reset': '60' } }, { status: 200 }]);
    expect(await get()).toMatchObject({ status: 429, attempts: 1 });
    expect(calls).toHaveLength(1);
    expect(sleeps).toEqual([]);
  });

  it('retries network errors, then reports one', async () => {
    const { get, calls } = client([new TypeError('fetch failed'), new TypeError('fetch failed'), new TypeError('x')]);
    expect(await get()).toMatchObject({ kind: 'network_error', attempts: 3 });
    expect(calls).toHaveLength(3);
  });

  it('maxRetries 0 makes one call', async () => {
    const { get, calls } = client([{ status: 500 }, { status: 200 }], { maxRetries: 0 });
    expect(await get()).toMatchObject({ status: 500, attempts: 1 });
    expect(calls).toHaveLength(1);
  });

  describe('under a validation deadline', () => {
    const deadlines: Deadline[] = [];
    const deadline = (ms: number): Deadline => {
      deadlines.push(new Deadline(ms));
      return deadlines[deadlines.length - 1];
    };
    afterEach(() => deadlines.splice(0).forEach((d) => d.clear()));

    it('does not start a retry wait that would end after the deadline: the answer stands', async () => {
      const { get, calls, sleeps } = client([{ status: 429, headers: { 'X-RateLimit-Reset': '2' } }, { status: 200 }]);
      expect(await get(deadline(1500))).toMatchObject({ kind: 'answered', status: 429, attempts: 1 });
      expect(calls).toHaveLength(1);
      expect(sleeps).toEqual([]);
    });

    it('waits as usual when the wait ends before the deadline', async () => {
      const { get, sleeps } = client([{ status: 429, headers: { 'X-RateLimit-Reset': '2' } }, { status: 200 }]);
      expect(await get(deadline(10_000))).toMatchObject({ status: 200, attempts: 2 });
      expect(sleeps).toEqual([2000]);
    });

    it('makes no call once the deadline has passed, and rejects with its error', async () => {
      const { get, calls } = client([{ status: 200 }]);
      const d = deadline(1);
      await new Promise((resolve) => setTimeout(resolve, 20));
      await expect(get(d)).rejects.toBeInstanceOf(DeadlineExceededError);
      expect(calls).toHaveLength(0);
    });
  });

  it('reads a non-JSON body as undefined', async () => {
    const { get } = client([{ status: 200, body: '<html>' }]);
    expect(await get()).toMatchObject({ status: 200, body: undefined });
  });

  describe('retryDelayMs', () => {
    const options = { baseBackoffMs: 250, maxRetryWaitMs: 5000, now: 0 };
    it.each([
      [{ 'X-RateLimit-Reset': '0' }, 0],
      [{ 'X-RateLimit-Reset': '5' }, 5000],
      [{ 'X-RateLimit-Reset': '6' }, null],
      [{ 'X-RateLimit-Reset': 'soon', 'Retry-After': '1' }, 1000],
      [{ 'Retry-After': '-1' }, 500],
      [{}, 500],
    ])('%j -> %p', (headers, expected) => {
      expect(retryDelayMs(new Headers(headers), 1, options)).toBe(expected);
    });
  });

  describe('over real HTTP', () => {
    let server: Server;
    let base: string;
    let hits: string[];
    beforeAll(async () => {
      hits = [];
      server = createServer((req, res) => {
        hits.push(req.url ?? '');
        if (req.url === '/redirect') {
          res.writeHead(302, { Location: `${base}/elsewhere` });
          res.end();
        }
        // '/hang' never answers.
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    });
    afterAll(async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    });

    const http = new ProviderHttpClient({ timeoutMs: 150, maxRetries: 2, maxRetryWaitMs: 10 });

    it('does not follow a redirect', async () => {
      hits.length = 0;
      const result = await http.get({ url: new URL(`${base}/redirect`), headers: {}, readBody: false });
      expect(result).toMatchObject({ kind: 'answered', status: 302, attempts: 1 });
      expect(hits).toEqual(['/redirect']);
    });

    it('aborts the request in flight when the deadline passes, long before its own timeout', async () => {
      hits.length = 0;
      const patient = new ProviderHttpClient({ timeoutMs: 60_000, maxRetries: 2, maxRetryWaitMs: 10 });
      const closed = new Promise<void>((resolve) => server.once('request', (_req, res) => res.once('close', resolve)));
      const deadline = new Deadline(150);
      try {
        const call = patient.get({ url: new URL(`${base}/hang`), headers: {}, readBody: true, deadline });
        await expect(call).rejects.toBeInstanceOf(DeadlineExceededError);
        await closed; // the server saw the client hang up
        expect(hits).toEqual(['/hang']);
      } finally {
        deadline.clear();
      }
    });

    it('times out once and does not retry a timeout', async () => {
      hits.length = 0;
      const result = await http.get({ url: new URL(`${base}/hang`), headers: {}, readBody: true });
      expect(result).toEqual({ kind: 'timeout', attempts: 1 });
      expect(hits).toEqual(['/hang']);
    });

    it('reports a refused connection as a network error after the retries', async () => {
      const closed = createServer();
      await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
      const port = (closed.address() as AddressInfo).port;
      await new Promise((resolve) => closed.close(resolve));
      const result = await http.get({ url: new URL(`http://127.0.0.1:${port}/`), headers: {}, readBody: false });
      expect(result).toMatchObject({ kind: 'network_error', attempts: 3 });
    });
  });
});
