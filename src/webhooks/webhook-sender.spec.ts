import dns from 'node:dns';
import { createServer, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { guardedLookup } from '../common/address-rules';
import { MAX_RESPONSE_BYTES, RESPONSE_HEADERS, WebhookSender } from './webhook-sender';

/** The sender against a server on loopback: what it sends, what it reads of the answer, and where it connects. */
describe('webhook sender', () => {
  let server: Server;
  let port: number;
  let handle: (response: ServerResponse, body: string) => void;
  const sockets = new Set<Socket>();
  let received: Array<{ headers: Record<string, unknown>; body: string }> = [];

  beforeAll(async () => {
    server = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8');
        received.push({ headers: request.headers, body });
        handle(response, body);
      });
    });
    server.on('connection', (socket) => {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as { port: number }).port;
  });
  afterAll(async () => {
    for (const socket of sockets) socket.destroy();
    await new Promise((resolve) => server.close(resolve));
  });
  beforeEach(() => {
    received = [];
  });
  afterEach(() => jest.restoreAllMocks());

  const request = (url = `http://127.0.0.1:${port}/in`) => ({
    url,
    headers: { 'webhook-id': 'msg_1' },
    body: '{"a":1}',
  });

  it('POSTs the body as JSON with the given headers; a 2xx is delivered', async () => {
    handle = (response) => response.writeHead(200).end('thanks');
    expect(await new WebhookSender(2000, true).send(request())).toMatchObject({
      delivered: true,
      status: 200,
      error: null,
    });
    expect(received).toEqual([
      {
        headers: expect.objectContaining({
          'content-type': 'application/json',
          'content-length': '7',
          'webhook-id': 'msg_1',
          'user-agent': 'Gatehouse-Webhooks/1',
        }),
        body: '{"a":1}',
      },
    ]);
  });

  it('a 500 or a redirect is not delivered (a redirect is not followed)', async () => {
    handle = (response) => response.writeHead(500).end();
    expect(await new WebhookSender(2000, true).send(request())).toMatchObject({ delivered: false, status: 500 });
    handle = (response) => response.writeHead(307, { location: `http://127.0.0.1:${port}/elsewhere` }).end();
    expect(await new WebhookSender(2000, true).send(request())).toMatchObject({ delivered: false, status: 307 });
    expect(received).toHaveLength(2);
  });

  it('reads at most a few KB of an answer that never ends', async () => {
    let written = 0;
    handle = (response) => {
      response.writeHead(200);
      const timer = setInterval(() => {
        written += 16 * 1024;
        if (!response.write(Buffer.alloc(16 * 1024, 'x'))) response.once('drain', () => undefined);
      }, 5);
      response.on('close', () => clearInterval(timer));
    };
    const started = performance.now();
    const outcome = await new WebhookSender(3000, true).send(request());
    expect(outcome).toMatchObject({ delivered: true, status: 200, error: null });
    expect(performance.now() - started).toBeLessThan(1000);
    // What is kept: the first MAX_RESPONSE_BYTES, said to be cut.
    expect(outcome.response).toMatchObject({ body: 'x'.repeat(MAX_RESPONSE_BYTES), truncated: true });
    expect(MAX_RESPONSE_BYTES).toBeLessThanOrEqual(8192);
    expect(written).toBeLessThan(1024 * 1024);
  });

  it("keeps the answer's status, a subset of its headers, its body and how long it took", async () => {
    handle = (response) =>
      response
        .writeHead(422, {
          'content-type': 'application/json',
          'content-length': '25',
          'retry-after': '30',
          'x-request-id': 'rcv-1',
          'set-cookie': 'session=abc',
          'x-internal-token': 'hush',
        })
        .end('{"error":"bad signature"}');
    const outcome = await new WebhookSender(2000, true).send(request());
    expect(outcome).toEqual({
      delivered: false,
      status: 422,
      error: null,
      response: {
        headers: {
          'content-type': 'application/json',
          'content-length': '25',
          date: expect.any(String),
          'retry-after': '30',
          'x-request-id': 'rcv-1',
        },
        body: '{"error":"bad signature"}',
        truncated: false,
      },
      durationMs: expect.any(Number),
    });
    expect(
      Object.keys(outcome.response!.headers).every((name) => (RESPONSE_HEADERS as readonly string[]).includes(name)),
    ).toBe(true);
    expect(outcome.durationMs).toBeGreaterThanOrEqual(0);
    expect(outcome.durationMs).toBeLessThan(2000);
  });

  it('keeps a body of exactly the bound whole, and bytes that are not text as U+FFFD (NUL included)', async () => {
    handle = (response) => response.writeHead(200).end(Buffer.alloc(MAX_RESPONSE_BYTES, 'y'));
    expect((await new WebhookSender(2000, true).send(request())).response).toMatchObject({
      body: 'y'.repeat(MAX_RESPONSE_BYTES),
      truncated: false,
    });
    handle = (response) => response.writeHead(200).end(Buffer.from([0x6f, 0x6b, 0x00, 0xff, 0x21]));
    expect((await new WebhookSender(2000, true).send(request())).response?.body).toBe('ok\uFFFD\uFFFD!');
  });

  it('gives up on a receiver that does not answer within the time-out', async () => {
    handle = () => undefined;
    const started = performance.now();
    expect(await new WebhookSender(500, true).send(request())).toEqual({
      delivered: false,
      status: null,
      error: 'timeout',
      response: null,
      durationMs: expect.any(Number),
    });
    expect(performance.now() - started).toBeGreaterThanOrEqual(450);
    expect(performance.now() - started).toBeLessThan(2000);
  });

  it('names a refused connection without the URL', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const free = (closed.address() as { port: number }).port;
    await new Promise((resolve) => closed.close(resolve));
    expect(await new WebhookSender(2000, true).send(request(`http://127.0.0.1:${free}/`))).toMatchObject({
      delivered: false,
      status: null,
      error: 'connection refused',
      response: null,
    });
  });

  it('never connects to loopback in production, by address or by name', async () => {
    handle = (response) => response.writeHead(200).end();
    const production = new WebhookSender(2000, false);
    for (const url of [
      `http://127.0.0.1:${port}/`,
      `http://[::ffff:127.0.0.1]:${port}/`,
      `http://localhost:${port}/`,
    ]) {
      expect(await production.send(request(url))).toMatchObject({
        delivered: false,
        status: null,
        error: 'address not allowed',
        response: null,
      });
    }
    expect(received).toEqual([]);
  });

  it('resolves a name once and connects to the address it checked (no DNS rebinding)', async () => {
    handle = (response) => response.writeHead(204).end();
    // A name that answers loopback once, then a private address: the check and the connection see the first answer.
    const answers = ['127.0.0.1', '10.0.0.1'];
    const lookup = jest
      .spyOn(dns, 'lookup')
      .mockImplementation(((
        _host: string,
        _options: unknown,
        callback: (error: null, addresses: dns.LookupAddress[]) => void,
      ) => callback(null, [{ address: answers.shift()!, family: 4 }])) as unknown as typeof dns.lookup);
    expect(await new WebhookSender(2000, true).send(request(`http://rebinding.test:${port}/`))).toMatchObject({
      delivered: true,
      status: 204,
      error: null,
    });
    expect(lookup).toHaveBeenCalledTimes(1);
    expect(received[0].headers.host).toBe(`rebinding.test:${port}`);
    // The second answer is refused, whatever the first was.
    expect(await new WebhookSender(2000, true).send(request(`http://rebinding.test:${port}/`))).toMatchObject({
      delivered: false,
      status: null,
      error: 'address not allowed',
    });
    expect(received).toHaveLength(1);
  });

  it('refuses a name when any of its addresses may not be called', (done) => {
    jest.spyOn(dns, 'lookup').mockImplementation(((
      _host: string,
      _options: unknown,
      callback: (error: null, addresses: dns.LookupAddress[]) => void,
    ) =>
      callback(null, [
        { address: '93.184.215.14', family: 4 },
        { address: '169.254.169.254', family: 4 },
      ])) as unknown as typeof dns.lookup);
    guardedLookup(false)('mixed.test', { all: true }, (error) => {
      expect(error).toMatchObject({ code: 'EADDRREFUSED' });
      done();
    });
  });
});
