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
        expectError(await send(method, path, bigReport), 413, 'INVALID_ARGUMENT', 'request body too large');
      }
      const nestedAtLength = nested(100_000);
      expectError(
        await send('put', '/v1/api-keys/exposed/x', nestedAtLength),
        413,
        'INVALID_ARGUMENT',
        'request body too large',
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
