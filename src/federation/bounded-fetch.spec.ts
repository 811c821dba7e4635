import dns from 'node:dns';
import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import { describeFetchError, FetchProblem, pinnedFetch } from './bounded-fetch';

describe('pinnedFetch', () => {
  let server: Server;
  let port: number;
  let received: IncomingMessage[];
  let handle: (request: IncomingMessage, response: ServerResponse) => void;

  beforeEach(async () => {
    received = [];
    handle = (_request, response) => response.writeHead(200, { 'content-type': 'application/json' }).end('{"a":1}');
    server = createServer((request, response) => {
      received.push(request);
      handle(request, response);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as { port: number }).port;
  });
  afterEach(async () => {
    jest.restoreAllMocks();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  const local = { allowLoopback: true, maxBytes: 1024 };
  const production = { allowLoopback: false, maxBytes: 1024 };

  it('answers as fetch does: status, headers, body; a form is sent with its type', async () => {
    handle = (request, response) => {
      let body = '';
      request.on('data', (chunk: Buffer) => (body += chunk.toString()));
      request.on('end', () =>
        response.writeHead(201, { 'x-seen': `${request.method} ${request.headers['content-type']} ${body}` }).end('ok'),
      );
    };
    const response = await pinnedFetch(
      `http://127.0.0.1:${port}/token`,
      { method: 'POST', body: new URLSearchParams({ grant_type: 'authorization_code' }) },
      local,
    );
    expect([response.status, await response.text(), response.headers.get('x-seen')]).toEqual([
      201,
      'ok',
      'POST application/x-www-form-urlencoded;charset=UTF-8 grant_type=authorization_code',
    ]);
  });

  it('never connects to loopback where it is not allowed (production), by address or by name', async () => {
    for (const url of [
      `http://127.0.0.1:${port}/`,
      `http://[::ffff:127.0.0.1]:${port}/`,
      `http://localhost:${port}/`,
    ]) {
      const error: unknown = await pinnedFetch(url, {}, production).catch((caught: unknown) => caught);
      expect(describeFetchError(error, 3000)).toBe(
        'the address it resolves to is private, loopback, link-local, multicast or reserved, which Gatehouse does not call',
      );
    }
    expect(received).toEqual([]);
  });

  it('resolves a name once and connects to the address it checked (no DNS rebinding)', async () => {
    const answers = ['127.0.0.1', '10.0.0.1'];
    const lookup = jest
      .spyOn(dns, 'lookup')
      .mockImplementation(((
        _host: string,
        _options: unknown,
        callback: (error: null, addresses: dns.LookupAddress[]) => void,
      ) => callback(null, [{ address: answers.shift()!, family: 4 }])) as unknown as typeof dns.lookup);
    const response = await pinnedFetch(`http://rebinding.test:${port}/`, {}, local);
    expect(response.status).toBe(200);
    expect(lookup).toHaveBeenCalledTimes(1);
    expect(received[0].headers.host).toBe(`rebinding.test:${port}`);
    const error: unknown = await pinnedFetch(`http://rebinding.test:${port}/`, {}, local).catch(
      (caught: unknown) => caught,
    );
    expect(describeFetchError(error, 3000)).toMatch(/^the address it resolves to is private/);
    expect(received).toHaveLength(1);
  });

  it('follows no redirect and reads no more than maxBytes', async () => {
    handle = (_request, response) => response.writeHead(302, { location: 'http://169.254.169.254/' }).end();
    expect((await pinnedFetch(`http://127.0.0.1:${port}/`, {}, local)).status).toBe(302);
    expect(received).toHaveLength(1);
    handle = (_request, response) => {
      response.writeHead(200);
      for (let i = 0; i < 4; i += 1) response.write('x'.repeat(512));
      response.end();
    };
    await expect(pinnedFetch(`http://127.0.0.1:${port}/`, {}, local)).rejects.toThrow(
      new FetchProblem('the answer is larger than 1024 bytes'),
    );
  });

  it('stops at the deadline, named as one', async () => {
    handle = () => undefined;
    const error: unknown = await pinnedFetch(
      `http://127.0.0.1:${port}/`,
      { signal: AbortSignal.timeout(200) },
      local,
    ).catch((caught: unknown) => caught);
    expect(describeFetchError(error, 200)).toBe('no answer within 0.2 s');
  });
});
