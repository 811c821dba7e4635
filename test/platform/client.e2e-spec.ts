import { readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import {
  apiKeyTokenSource,
  createGatehouseClient,
  exchangeApiKey,
  GatehouseError,
  toGatehouseError,
  unwrap,
} from '../../client';
import { KEY_VALUE } from '../support/http-assertions';
import { createTestApp, TestApp, TestUser } from '../support/test-app';

/**
 * The typed client (client/, docs/client.md) against a server listening on a real port: what
 * internal tooling does with it. The client's types come from the committed OpenAPI document, which
 * `npm run client:check` keeps equal to what these controllers produce.
 */
describe('typed client against a running server', () => {
  let t: TestApp;
  let baseUrl: string;
  let user: TestUser;

  beforeAll(async () => {
    t = await createTestApp();
    await t.app.listen(0, '127.0.0.1');
    const { port } = t.app.getHttpServer().address() as AddressInfo;
    baseUrl = `http://127.0.0.1:${port}`;
    user = await t.user({ org: 'client-org' });
  });
  afterAll(() => t.close());

  it('was generated from the document this server serves (npm run client:generate builds it without a database)', async () => {
    const served = await (await fetch(`${baseUrl}/openapi.json`)).json();
    const committed = JSON.parse(readFileSync(join(__dirname, '..', '..', 'client', 'openapi.json'), 'utf8'));
    expect(committed).toEqual(served);
  });

  it('creates a key, exchanges it, lists with the access token, revokes it', async () => {
    const asUser = createGatehouseClient({ baseUrl, bearer: user.token });

    const created = await unwrap(asUser.POST('/v1/user-api-keys', { body: { label: 'deploy bot' } }));
    expect(created.api_key).toMatchObject({ label: 'deploy bot', status: 'ACTIVE', user_id: user.userId });
    expect(created.opaque_key).toMatch(KEY_VALUE);

    const token = await exchangeApiKey(asUser, created.opaque_key);
    expect(token).toMatchObject({ token_type: 'Bearer', expires_in: 1800 });

    const asTool = createGatehouseClient({ baseUrl, bearer: token.access_token });
    const page = await unwrap(asTool.GET('/v1/user-api-keys', { params: { query: { limit: 10 } } }));
    expect(page).toMatchObject({ page: 1, limit: 10 });
    expect(page.api_keys.map((key) => key.id)).toContain(created.api_key.id);
    expect(page.api_keys.every((key) => !('value' in key))).toBe(true);

    const revoked = await unwrap(
      asUser.DELETE('/v1/user-api-keys/{id}', { params: { path: { id: created.api_key.id } } }),
    );
    expect(revoked.api_key.status).toBe('REVOKED');

    // The key's access token dies with it, and the key no longer exchanges: typed errors.
    await expect(unwrap(asTool.GET('/v1/user-api-keys'))).rejects.toMatchObject({
      status: 401,
      code: 'UNAUTHENTICATED',
      message: 'user not authenticated',
      reason: 'credential_revoked',
    });
    const refused = await exchangeApiKey(asUser, created.opaque_key).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(GatehouseError);
    expect(refused).toMatchObject({
      status: 401,
      code: 'UNAUTHENTICATED',
      message: 'api key revoked',
      reason: 'api_key_revoked',
    });
  });

  it('apiKeyTokenSource exchanges once and reuses the access token for a tool', async () => {
    const asUser = createGatehouseClient({ baseUrl, bearer: user.token });
    const { opaque_key } = await unwrap(asUser.POST('/v1/user-api-keys', { body: { label: 'tool' } }));
    let exchanges = 0;
    const countingFetch: typeof fetch = (input, init) => {
      if (new Request(input, init).url.endsWith('/v1/token')) exchanges += 1;
      return fetch(input, init);
    };
    const tool = createGatehouseClient({
      baseUrl,
      bearer: apiKeyTokenSource({ baseUrl, apiKey: opaque_key, fetch: countingFetch }),
    });
    const [first, second] = await Promise.all([
      unwrap(tool.GET('/v1/user-api-keys')),
      unwrap(tool.GET('/v1/user-api-keys')),
    ]);
    await unwrap(tool.GET('/v1/notification-integrations'));
    expect(first.total_count).toBe(second.total_count);
    expect(exchanges).toBe(1);
  });

  it('an error answer becomes a GatehouseError with the code and message of the API', async () => {
    const asUser = createGatehouseClient({ baseUrl, bearer: user.token });
    const error = await unwrap(
      asUser.GET('/v1/user-api-keys/{id}', { params: { path: { id: '00000000-0000-4000-8000-000000000000' } } }),
    ).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(GatehouseError);
    expect(error).toMatchObject({
      status: 404,
      code: 'NOT_FOUND',
      message: 'api key not found',
      reason: 'api_key_not_found',
      body: { code: 'NOT_FOUND', message: 'api key not found', reason: 'api_key_not_found' },
    });
  });

  it("an answer that is not the API's (a proxy's page) is UNKNOWN, with no reason", () => {
    const page = new Response('<html>Bad Gateway</html>', { status: 502, headers: { 'Retry-After': '5' } });
    const error = toGatehouseError(page, '<html>Bad Gateway</html>');
    expect(error).toMatchObject({ status: 502, code: 'UNKNOWN', reason: undefined, retryAfterSeconds: 5, body: {} });
  });
});
