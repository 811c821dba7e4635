import type { Server } from 'node:http';
import { AddressInfo, connect, Socket } from 'node:net';
import type { Response } from 'supertest';
import { MAX_JSON_DEPTH } from '../../src/common/json-body';
import { bearer, expectError, expectInvalidArgument } from '../support/http-assertions';
import { createTestApp, DATABASE_KIND, TestApp, TestUser } from '../support/test-app';

/**
 * What a request body may cost (docs/api.md#conventions, docs/adr/0026-request-body-bounds.md):
 * JSON nested past MAX_JSON_DEPTH is refused before it is parsed, the larger body of exposed-key
 * reports is read for POST of that exact route only, and no body a client sends is answered 500.
 */
const nested = (depth: number, open = '[', close = ']'): string => open.repeat(depth) + close.repeat(depth);
const nestedObject = (depth: number): string => '{"a":'.repeat(depth) + '1' + '}'.repeat(depth);

/** What a client sending a body without end saw, and what the server read of it. */
interface Overflow {
  /** The status line and headers of the answer, lower-cased; '' when none came. */
  head: string;
  /** Bytes the server read from the connection, headers included. */
  serverRead: number;
  /** The server closed the connection (the client did not give up first). */
  closedByServer: boolean;
}

/** Past this, a server still reading is draining the body: the client gives up. */
const GIVE_UP_AFTER_BYTES = 64 * 1024 * 1024;

describe(`request bodies on ${DATABASE_KIND}`, () => {
  let t: TestApp;
  let admin: TestUser;
  beforeAll(async () => {
    t = await createTestApp({ env: { EXPOSED_REPORT_MIN_RESPONSE_MS: '0' } });
    admin = await t.user({ org: 'bodies' });
  });
  afterAll(() => t.close());

  const send = (method: 'post' | 'put' | 'patch' | 'get', path: string, body: string, token?: string) => {
    const request = t.http()[method](path).set('Content-Type', 'application/json');
    if (token !== undefined) request.set(bearer(token));
    return request.send(body);
  };

  it(`refuses JSON nested deeper than ${MAX_JSON_DEPTH} levels with 400, on every route, never 500`, async () => {
    const deepArray = `{"code":"x","extra":${nested(8000)}}`;
    const deepObject = `{"code":"x","extra":${nestedObject(2500)}}`;
    for (const body of [deepArray, deepObject]) expect(body.length).toBeLessThan(16 * 1024);
    const answers: Response[] = [
      await send('post', '/v1/console/sessions', deepArray),
      await send('post', '/v1/console/sessions', deepObject),
      await send('post', '/v1/user-api-keys', `{"label":"x","extra":${nested(5000)}}`, admin.token),
      await send('post', '/v1/api-keys/exposed', `{"keys":${nested(MAX_JSON_DEPTH + 1)}}`),
      await send('patch', '/v1/organization', `{"x":${nestedObject(MAX_JSON_DEPTH)}}`, admin.token),
    ];
    for (const answer of answers) expectInvalidArgument(answer);
  });

  it('counts brackets inside strings as text, not nesting', async () => {
    const label = `[{"\\"[${'['.repeat(40)}`;
    const created = await send('post', '/v1/user-api-keys', JSON.stringify({ label }), admin.token).expect(201);
    expect(created.body.api_key.label).toBe(label);
  });

  it('a sign-in body nested too deep is refused like any malformed body, and signs nobody in', async () => {
    for (let i = 0; i < 5; i += 1) expectInvalidArgument(await send('post', '/v1/console/sessions', nested(8000)));
  });

  it('takes JSON in UTF-8 only: another charset is 400', async () => {
    const utf16 = Buffer.from(JSON.stringify({ label: 'x' }), 'utf16le');
    const answer = await t
      .http()
      .post('/v1/user-api-keys')
      .set(bearer(admin.token))
      .set('Content-Type', 'application/json; charset=utf-16le')
      .send(utf16);
    expectInvalidArgument(answer);
  });

  describe('an oversized body: 413 at once, the connection closed, the rest never read', () => {
    const TEN_GB = String(10 * 1024 ** 3);
    let port: number;
    const accepted: Socket[] = [];
    beforeAll(async () => {
      const server = t.app.getHttpServer() as Server;
      server.on('connection', (socket: Socket) => accepted.push(socket));
      await new Promise<void>((ready) => server.listen(0, '127.0.0.1', ready));
      port = (server.address() as AddressInfo).port;
    });

    /**
     * Sends the request line and headers, then body bytes as fast as the connection takes them (chunked, or under a
     * Content-Length it never reaches), until the server closes the connection or GIVE_UP_AFTER_BYTES were sent.
     */
    function overflow(request: string, headers: Record<string, string>): Promise<Overflow> {
      const chunked = headers['Content-Length'] === undefined;
      const lines = Object.entries({
        Host: 'localhost',
        ...headers,
        ...(chunked && { 'Transfer-Encoding': 'chunked' }),
      });
      const data = Buffer.alloc(64 * 1024, 'a');
      const piece = chunked
        ? Buffer.concat([Buffer.from(`${data.length.toString(16)}\r\n`), data, Buffer.from('\r\n')])
        : data;
      return new Promise((resolve) => {
        const before = new Set(accepted);
        const socket = connect(port, '127.0.0.1');
        let received = '';
        let closedByServer = false;
        socket.on('data', (bytes: Buffer) => (received += bytes.toString('latin1')));
        socket.on('error', () => (closedByServer = true));
        socket.on('end', () => (closedByServer = true));
        socket.on('close', () => {
          const serverSocket = accepted.find((s) => !before.has(s));
          const head = received.split('\r\n\r\n')[0].toLowerCase();
          resolve({ head, serverRead: serverSocket?.bytesRead ?? -1, closedByServer });
        });
        const pump = (): void => {
          while (!socket.destroyed && !closedByServer) {
            if (socket.bytesWritten > GIVE_UP_AFTER_BYTES) {
              socket.destroy();
              return;
            }
            if (!socket.write(piece)) {
              socket.once('drain', pump);
              return;
            }
          }
        };
        socket.write(`${request} HTTP/1.1\r\n${lines.map(([name, value]) => `${name}: ${value}\r\n`).join('')}\r\n`);
        pump();
      });
    }

    /** The answer came at once with `Connection: close`, and the server closed having read about the limit at most. */
    const expectClosedUnread = (request: string, seen: Overflow, status: number): void => {
      const statusLine = `http/1.1 ${status} ${status === 413 ? 'payload too large' : status === 400 ? 'bad request' : 'unauthorized'}`;
      expect([request, seen.head.split('\r\n')[0]]).toEqual([request, statusLine]);
      expect([request, seen.head]).toEqual([request, expect.stringContaining('\r\nconnection: close')]);
      expect([request, seen.closedByServer]).toEqual([request, true]);
      // The body limit and what a read or two of the socket may bring past it.
      expect([request, seen.serverRead]).toEqual([request, expect.any(Number)]);
      expect([request, seen.serverRead > 0 && seen.serverRead < 1024 * 1024]).toEqual([request, true]);
    };

    it('a Content-Length over the limit (10 GB): 413 before any of it is read, on JSON, form and large-body routes', async () => {
      const json = { 'Content-Type': 'application/json', 'Content-Length': TEN_GB };
      const form = { 'Content-Type': 'application/x-www-form-urlencoded', 'Content-Length': TEN_GB };
      for (const [request, headers] of [
        ['POST /v1/user-api-keys', { ...json, ...bearer(admin.token) }],
        ['POST /v1/console/sessions', json],
        ['POST /ssf/poll', json],
        ['POST /v1/api-keys/exposed', json],
        ['POST /oauth/token', form],
        ['POST /oauth/introspect', form],
      ] as const) {
        expectClosedUnread(request, await overflow(request, headers), 413);
      }
    });

    it('a chunked body that passes the limit: 413 as soon as it does, on JSON, form and large-body routes', async () => {
      const json = { 'Content-Type': 'application/json' };
      const form = { 'Content-Type': 'application/x-www-form-urlencoded' };
      for (const [request, headers] of [
        ['POST /v1/user-api-keys', { ...json, ...bearer(admin.token) }],
        ['POST /v1/token', json],
        ['POST /ssf/poll', json],
        ['POST /v1/api-keys/exposed', json],
        ['POST /oauth/token', form],
      ] as const) {
        expectClosedUnread(request, await overflow(request, headers), 413);
      }
    });

    it('a body refused unread for its type is not read either; forward auth, which reads no body, does not read one', async () => {
      const text = { 'Content-Type': 'text/plain' };
      expectClosedUnread('text', await overflow('POST /v1/user-api-keys', text), 400);
      // POST /v1/token looks at the header first (docs/api.md#post-v1token): its 401, and the body left unread too.
      expectClosedUnread('token', await overflow('POST /v1/token', { ...text, 'Content-Length': TEN_GB }), 401);
      expectClosedUnread('forward auth', await overflow('POST /v1/forward-auth', {}), 401);
      const declared = await overflow('GET /v1/forward-auth', { 'Content-Length': TEN_GB });
      expectClosedUnread('forward auth, declared', declared, 401);
    });
  });

  describe('Expect: 100-continue: `100 Continue` only for a body that is going to be read', () => {
    let port: number;
    beforeAll(async () => {
      const server = t.app.getHttpServer() as Server;
      if (!server.listening) await new Promise<void>((ready) => server.listen(0, '127.0.0.1', ready));
      port = (server.address() as AddressInfo).port;
    });

    /**
     * Sends the request head with `Expect: 100-continue`, and `body` only once `100 Continue` came (as curl and Node's
     * clients do); everything the server sent, in order, once it closed the connection.
     */
    function expecting(request: string, headers: Record<string, string>, body = ''): Promise<string> {
      const lines = Object.entries({ Host: 'localhost', Connection: 'close', Expect: '100-continue', ...headers });
      return new Promise((resolve, reject) => {
        const socket = connect(port, '127.0.0.1');
        let received = '';
        let sent = false;
        socket.on('data', (bytes: Buffer) => {
          received += bytes.toString('latin1');
          if (!sent && received.startsWith('HTTP/1.1 100 Continue\r\n\r\n')) {
            sent = true;
            socket.write(body);
          }
        });
        socket.on('error', reject);
        socket.on('close', () => resolve(received));
        socket.write(`${request} HTTP/1.1\r\n${lines.map(([name, value]) => `${name}: ${value}\r\n`).join('')}\r\n`);
      });
    }
    const TWO_HUNDRED_MB = String(200 * 1024 * 1024);

    it('a declared Content-Length over the limit: 413 with the API error body, no `100 Continue`, on every kind of route', async () => {
      const json = { 'Content-Type': 'application/json', 'Content-Length': TWO_HUNDRED_MB };
      const form = { 'Content-Type': 'application/x-www-form-urlencoded', 'Content-Length': TWO_HUNDRED_MB };
      // The API's error body; the OAuth endpoints' (RFC 6749 section 5.2).
      const api = { code: 'INVALID_ARGUMENT', message: 'request body too large', reason: 'body_too_large' };
      const oauth = { error: 'invalid_request', error_description: 'request body too large', reason: 'body_too_large' };
      for (const [request, headers, error] of [
        ['POST /v1/user-api-keys', { ...json, ...bearer(admin.token) }, api],
        ['POST /v1/user-api-keys', json, api],
        ['POST /v1/console/sessions', json, api],
        ['PATCH /v1/organization', { ...json, ...bearer(admin.token) }, api],
        ['POST /ssf/poll', json, api],
        ['POST /v1/api-keys/exposed', json, api],
        ['POST /v1/token', json, api],
        ['POST /oauth/token', form, oauth],
        ['POST /oauth/introspect', form, oauth],
      ] as const) {
        const received = await expecting(request, headers);
        const [head, answer] = received.split('\r\n\r\n');
        expect([request, head.split('\r\n')[0]]).toEqual([request, 'HTTP/1.1 413 Payload Too Large']);
        expect([request, head.toLowerCase()]).toEqual([request, expect.stringContaining('\r\nconnection: close')]);
        expect([request, JSON.parse(answer)]).toEqual([request, error]);
        expect([request, received.includes('100 Continue')]).toEqual([request, false]);
      }
    });

    it('a body refused for its type is answered without `100 Continue` too', async () => {
      const received = await expecting('POST /v1/user-api-keys', {
        ...bearer(admin.token),
        'Content-Type': 'text/plain',
        'Content-Length': '2',
      });
      expect(received.split('\r\n')[0]).toBe('HTTP/1.1 400 Bad Request');
      expect(received).not.toContain('100 Continue');
    });

    it('a body within the limit gets `100 Continue`, is sent, and is read as without the header', async () => {
      const body = JSON.stringify({ label: 'after 100 Continue' });
      const received = await expecting(
        'POST /v1/user-api-keys',
        { ...bearer(admin.token), 'Content-Type': 'application/json', 'Content-Length': String(body.length) },
        body,
      );
      const [interim, head, answer] = received.split('\r\n\r\n');
      expect(interim).toBe('HTTP/1.1 100 Continue');
      expect(head.split('\r\n')[0]).toBe('HTTP/1.1 201 Created');
      expect(JSON.parse(answer).api_key.label).toBe('after 100 Continue');
    });
  });

  describe('the larger body of POST /v1/api-keys/exposed is for that route only', () => {
    const bigReport = JSON.stringify({ keys: Array.from({ length: 100 }, () => 'x'.repeat(512)) });
    beforeAll(() => expect(bigReport.length).toBeGreaterThan(16 * 1024));

    it('another method or a sub-path gets the ordinary limit: 413, never read as a report', async () => {
      for (const [method, path] of [
        ['put', '/v1/api-keys/exposed'],
        ['patch', '/v1/api-keys/exposed'],
        ['post', '/v1/api-keys/exposed/x'],
        ['put', '/v1/api-keys/exposed/x'],
      ] as const) {
        expectError(
          await send(method, path, bigReport),
          413,
          'INVALID_ARGUMENT',
          'request body too large',
          'body_too_large',
        );
      }
      const nestedAtLength = nested(100_000);
      expectError(
        await send('put', '/v1/api-keys/exposed/x', nestedAtLength),
        413,
        'INVALID_ARGUMENT',
        'request body too large',
        'body_too_large',
      );
    });

    it('the route itself takes it, however Express matches its path', async () => {
      for (const path of ['/v1/api-keys/exposed', '/v1/api-keys/exposed/', '/V1/API-KEYS/EXPOSED']) {
        await send('post', path, bigReport).expect(202, {});
      }
    });

    it('a nested body at the limit is refused after reading, before parsing: 400', async () => {
      expectInvalidArgument(await send('post', '/v1/api-keys/exposed', nested(150_000)));
    });
  });
});
