import { CredentialsService } from '../../src/credentials/credentials.service';
import { Writable } from 'node:stream';
import type { Response, Test } from 'supertest';
import { ApiKeyCodec } from '../../src/api-keys/api-key-codec';
import { ApiKeysService } from '../../src/api-keys/api-keys.service';
import { TokenService } from '../../src/auth/token.service';
import { createTestApp, TestApp, TestUser } from '../support/test-app';

/**
 * Logs (docs/operations.md): JSON lines, a request id on every line
 * made while serving a request, the same id in X-Request-Id (a sane incoming one is reused), and no
 * secret anywhere, at level debug, over a full scenario including failures and 500s.
 */
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

interface LogLine {
  level: string;
  time: string;
  msg?: string;
  requestId?: string;
  context?: string;
  req?: { method: string; path: string; ip: string };
  res?: { statusCode: number };
  err?: Record<string, unknown>;
  [field: string]: unknown;
}

describe('structured logs', () => {
  let t: TestApp;
  let captured = '';
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      captured += chunk.toString('utf8');
      done();
    },
  });
  const lines = (): string[] => captured.split('\n').filter((line) => line !== '');
  const parsed = (): LogLine[] => lines().map((line) => JSON.parse(line) as LogLine);
  /** The access-log line of the response carrying this request id. */
  const accessLine = (response: Response): LogLine[] =>
    parsed().filter((line) => line.requestId === response.headers['x-request-id'] && line.res !== undefined);

  // What the scenario produces and must never be logged.
  const secrets: Record<string, string> = {};
  const responses: Array<{ response: Response; method: string; path: string }> = [];
  let user: TestUser;

  async function call(method: 'get' | 'post' | 'delete', path: string, setUp: (r: Test) => Test = (r) => r) {
    const response: Response = await setUp(t.http()[method](path));
    responses.push({ response, method: method.toUpperCase(), path: path.split('?')[0] });
    return response;
  }

  beforeAll(async () => {
    t = await createTestApp({ env: { LOG_LEVEL: 'debug' }, logStream: sink });
    // Start-up lines (Nest's own messages) are JSON too, but belong to no request.
    expect(lines().length).toBeGreaterThan(0);
    for (const line of parsed()) expect(line.requestId).toBeUndefined();
    captured = '';

    user = await t.user();
    secrets.sessionToken = user.token;
    secrets.pepper = t.env.API_KEY_PEPPER!;
    secrets.jwtPrivateKeyPem = t.env.JWT_PRIVATE_KEY!;
    secrets.encryptionKey = t.env.INTEGRATIONS_ENCRYPTION_KEY!;
    // Every base64 line of the PEM, so that a re-wrapped key would be caught too.
    t.env
      .JWT_PRIVATE_KEY!.split('\n')
      .filter((line) => line !== '' && !line.startsWith('-----'))
      .forEach((line, i) => (secrets[`jwtPemLine${i}`] = line));

    const created = await call('post', '/v1/user-api-keys', (r) =>
      r.set('Authorization', `Bearer ${user.token}`).send({ label: 'logged' }),
    );
    expect(created.status).toBe(201);
    const keyId: string = created.body.api_key.id;
    const value: string = created.body.opaque_key;
    secrets.apiKeyValue = value;
    secrets.apiKeySecret = value.split('.')[2];

    const exchanged = await call('post', '/v1/token', (r) => r.set('Authorization', `ApiKey ${value}`));
    expect(exchanged.status).toBe(200);
    secrets.accessToken = exchanged.body.access_token;

    const read = await call('get', `/v1/user-api-keys/${keyId}`, (r) =>
      r.set('Authorization', `Bearer ${secrets.accessToken}`),
    );
    expect(read.status).toBe(200);

    // An incoming sane X-Request-Id is reused; a key pasted into the query string is not logged.
    const traced = await call('get', `/v1/user-api-keys?api_key=${value}`, (r) =>
      r.set('Authorization', `Bearer ${user.token}`).set('X-Request-Id', 'client-trace-42'),
    );
    expect(traced.status).toBe(400);
    const insane = await call('get', '/v1/user-api-keys', (r) =>
      r.set('Authorization', `Bearer ${user.token}`).set('X-Request-Id', 'not a sane {id}'),
    );
    expect(insane.status).toBe(200);

    // Failed exchanges: wrong secrets for the real key id, and a malformed value.
    const codec = t.get(ApiKeysService).codec;
    for (let i = 0; i < 3; i += 1) {
      const wrong = codec.format(keyId, ApiKeyCodec.newSecret());
      secrets[`wrongKey${i}`] = wrong;
      const failed = await call('post', '/v1/token', (r) => r.set('Authorization', `ApiKey ${wrong}`));
      expect(failed.status).toBe(401);
    }
    const malformed = await call('post', '/v1/token', (r) => r.set('Authorization', 'ApiKey dev.garbage'));
    expect(malformed.status).toBe(401);

    // A body the parser refuses (before Nest's pipeline) still gets an id and a line.
    const badJson = await call('post', '/v1/user-api-keys', (r) =>
      r.set('Authorization', `Bearer ${user.token}`).set('Content-Type', 'application/json').send('{"label":'),
    );
    expect(badJson.status).toBe(400);

    // Two 500s: signing fails (the controller logs it), and an unexpected error carrying the
    // statement's bound values as a driver error does (the exception filter logs it).
    jest.spyOn(t.get(TokenService), 'mint').mockImplementationOnce(() => {
      throw new Error('signing key unavailable');
    });
    const mintFailed = await call('post', '/v1/token', (r) => r.set('Authorization', `ApiKey ${value}`));
    expect(mintFailed.status).toBe(500);
    expect(mintFailed.body).toEqual({
      code: 'INTERNAL',
      message: 'failed to mint access token',
      reason: 'mint_failed',
    });
    jest.spyOn(t.get(CredentialsService), 'list').mockImplementationOnce(() => {
      throw Object.assign(new Error('statement failed'), { parameters: [value, secrets.accessToken] });
    });
    const crashed = await call('get', '/v1/user-api-keys', (r) => r.set('Authorization', `Bearer ${user.token}`));
    expect(crashed.status).toBe(500);
    expect(crashed.body).toEqual({ code: 'INTERNAL', message: 'internal error', reason: 'internal' });

    const revoked = await call('delete', `/v1/user-api-keys/${keyId}`, (r) =>
      r.set('Authorization', `Bearer ${user.token}`),
    );
    expect(revoked.status).toBe(200);
    const afterRevoke = await call('post', '/v1/token', (r) => r.set('Authorization', `ApiKey ${value}`));
    expect(afterRevoke.status).toBe(401);

    await new Promise((resolve) => setImmediate(resolve));
  });
  afterAll(() => t.close());

  it('writes one JSON object per line, each with a request id', () => {
    expect(lines().length).toBeGreaterThanOrEqual(responses.length);
    for (const line of lines()) {
      const entry = JSON.parse(line) as LogLine;
      expect(typeof entry.level).toBe('string');
      expect(entry.time).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      expect(typeof entry.requestId).toBe('string');
      // Bound once, never repeated by a caller (duplicate keys break some log pipelines).
      expect(line.split('"requestId":').length).toBe(2);
    }
  });

  it('logs each request once, under the id sent back in X-Request-Id', () => {
    const ids = new Set<string>();
    for (const { response, method, path } of responses) {
      const id = response.headers['x-request-id'];
      expect(id).toBeDefined();
      ids.add(id);
      const [line, ...more] = accessLine(response);
      expect(more).toEqual([]);
      expect(line.req).toEqual({ method, path, ip: expect.any(String) });
      expect(line.res).toEqual({ statusCode: response.status });
      expect(line.level).toBe(response.status >= 500 ? 'error' : 'info');
      // The cause of a 500 is on the line that logged it, not repeated here.
      expect(line.err).toBeUndefined();
    }
    expect(ids.size).toBe(responses.length);
  });

  it('reuses a sane incoming X-Request-Id and replaces any other', () => {
    const traced = responses.find(({ response }) => response.headers['x-request-id'] === 'client-trace-42');
    expect(traced).toBeDefined();
    expect(accessLine(traced!.response)).toHaveLength(1);
    for (const { response } of responses) {
      if (response !== traced!.response) expect(response.headers['x-request-id']).toMatch(UUID);
    }
  });

  it("routes Nest's Logger through pino, bound to the request", () => {
    const mintFailed = parsed().filter((line) => line.msg === 'signing an access token failed');
    expect(mintFailed).toHaveLength(1);
    expect(mintFailed[0]).toMatchObject({ level: 'error', context: 'TokenExchangeService' });
    expect(mintFailed[0].err).toMatchObject({ message: 'signing key unavailable' });
    const mintResponse = responses.find(({ response }) => response.body?.message === 'failed to mint access token');
    expect(mintFailed[0].requestId).toBe(mintResponse!.response.headers['x-request-id']);

    const unexpected = parsed().filter((line) => line.msg === 'unexpected error');
    expect(unexpected).toHaveLength(1);
    expect(unexpected[0]).toMatchObject({ level: 'error', context: 'ExceptionFilter', method: 'GET' });
    expect(unexpected[0].err).toMatchObject({ message: 'statement failed', parameters: '[REDACTED]' });
  });

  it('never logs a secret', () => {
    expect(Object.keys(secrets).length).toBeGreaterThan(10);
    for (const [name, secret] of Object.entries(secrets)) {
      expect(secret.length).toBeGreaterThanOrEqual(20);
      if (captured.includes(secret)) throw new Error(`the logs contain ${name}`);
    }
    // Nor any Authorization header, whatever its scheme.
    expect(captured).not.toMatch(/ApiKey |Bearer |authorization/i);
  });
});
