import { ResourceServersService } from '../../src/resource-servers/resource-servers.service';
import { EchoUpstream, RawHeaders, ReceivedRequest, send } from './gateways';
import { freePort } from './ports';
import type { Environment } from '../../src/config/configuration';
import { createTestApp, TestApp, TestUser } from './test-app';
import { pause } from './wait';

/**
 * What every gateway configuration of docs/resource-servers.md must do, asserted the same way for each (nginx and
 * Caddy run for real, Traefik and Envoy reproduced): tokens minted for the service pass with who they are; the client
 * can bend neither the audience nor the scope through its path or query; the `X-Gatehouse-*` headers a client sends
 * never reach the service; no one is ever answered with another caller's identity; a revoked key is refused within the
 * documented window. The blocks protect https://orders.example.com: every path with api_keys:read, /admin/ with
 * api_keys:manage.
 */

export const ORDERS = 'https://orders.example.com';
/** Another registered service: its tokens must never pass at the orders gateway. */
export const BILLING = 'https://billing.example.com';

/** The five headers Gatehouse's 200 carries, in lower case (X-Gatehouse-Api-Key-Id: the credential's id, deprecated). */
const IDENTITY = [
  'x-gatehouse-user-id',
  'x-gatehouse-organization-id',
  'x-gatehouse-credential-id',
  'x-gatehouse-api-key-id',
  'x-gatehouse-scope',
];

/** A client's own identity headers: the five names in other letter cases and with `_`, and one Gatehouse never sets. */
export const SPOOFED: RawHeaders = [
  ['X-Gatehouse-User-Id', 'spoofed-user'],
  ['x-gatehouse-organization-id', 'spoofed-organization'],
  ['X-GATEHOUSE-API-KEY-ID', 'spoofed-key'],
  ['x-Gatehouse-Credential-ID', 'spoofed-credential'],
  ['X-Gatehouse-Scope', 'api_keys:manage'],
  ['X_Gatehouse_User_Id', 'spoofed-user'],
  ['x_gatehouse_organization_id', 'spoofed-organization'],
  ['X-Gatehouse_Scope', 'api_keys:manage'],
  ['X-Gatehouse-Role', 'admin'],
];

/** Gatehouse listening on a loopback port, with the two services registered; `env` on top of the test defaults. */
export async function startGatehouse(env: Environment = {}): Promise<{ t: TestApp; port: number }> {
  const t = await createTestApp({ env });
  const port = await freePort();
  await t.app.listen(port, '127.0.0.1');
  await t.get(ResourceServersService).register('Orders', ORDERS);
  await t.get(ResourceServersService).register('Billing', BILLING);
  return { t, port };
}

export interface GatewayUnderTest {
  t: TestApp;
  /** Where clients connect to the gateway. */
  port: number;
  upstream: EchoUpstream;
}

export interface ContractOptions {
  /**
   * Whether the gateway drops `X-Gatehouse-*` names Gatehouse never sets (nginx cannot drop headers by pattern: it
   * replaces the five names Gatehouse sets, in any letter case, and drops names with `_`).
   */
  dropsInventedNames: boolean;
  /**
   * Whether the gateway caches allowed answers (nginx): then a revoked key may pass for FORWARD_AUTH_CACHE_SECONDS
   * + 1 s (nginx counts a stored answer's life in whole seconds of its clock); otherwise not after the revocation.
   */
  caches: boolean;
  /** Whether the gateway passes Gatehouse's 403 challenge on (nginx answers a 403 of auth_request with its own page). */
  challengesOn403: boolean;
  /** A path the configuration protects with api_keys:manage (Envoy's block has one scope for the whole listener). */
  managePath?: string;
}

/** The `X-Gatehouse-*` headers (any case, `_` for `-`) a request reached the upstream with: [name in lower case, value]. */
export function identityHeaders(request: ReceivedRequest | undefined): Array<[string, string]> {
  if (request === undefined) throw new Error('the request did not reach the upstream');
  return request.headers
    .filter(([name]) => /^x[-_]gatehouse[-_]/i.test(name))
    .map(([name, value]): [string, string] => [name.toLowerCase(), value])
    .sort(([a], [b]) => a.localeCompare(b));
}

/** Defines the contract's tests for the gateway `gateway()` returns (set up in the caller's beforeAll). */
export function gatewayContract(gateway: () => GatewayUnderTest, options: ContractOptions): void {
  let member: TestUser;
  let admin: TestUser;

  const t = () => gateway().t;
  const get = (path: string, token?: string, headers: RawHeaders = []) =>
    send(gateway().port, path, token === undefined ? headers : [['Authorization', `Bearer ${token}`], ...headers]);
  const lastReceived = () => gateway().upstream.received.at(-1);
  /** A key of `user` (with `fields`, e.g. scopes), and a token for `resource` (undefined: Gatehouse's own API). */
  const keyAndToken = async (user: TestUser, resource: string | undefined, fields: Record<string, unknown> = {}) => {
    const key = await t().createKey(user, 'gateway', fields);
    const token = await t().exchange(key.value, resource === undefined ? undefined : { resource });
    return { key, token };
  };
  /** What the upstream must receive for `user`'s key: the five headers, Gatehouse's values. */
  const identityOf = (user: TestUser, keyId: string, scope: string) =>
    [
      ['x-gatehouse-api-key-id', keyId],
      ['x-gatehouse-credential-id', keyId],
      ['x-gatehouse-organization-id', user.organizationId],
      ['x-gatehouse-scope', scope],
      ['x-gatehouse-user-id', user.userId],
    ] as Array<[string, string]>;

  beforeAll(async () => {
    member = await t().user({ org: 'gateway', role: 'member' });
    admin = await t().user({ org: 'gateway', role: 'admin' });
  });

  it("passes a token minted for the service (resource), and the service gets who it is from Gatehouse's answer", async () => {
    const { key, token } = await keyAndToken(member, ORDERS);
    const allowed = await get('/orders/42', token);
    expect(allowed.status).toBe(200);
    expect(allowed.body).toBe('upstream GET /orders/42');
    expect(identityHeaders(lastReceived())).toEqual(identityOf(member, key.id, 'api_keys:read integrations:read'));

    if (options.managePath === undefined) return;
    const manager = await keyAndToken(admin, ORDERS, { scopes: ['api_keys:read', 'api_keys:manage'] });
    expect((await get(options.managePath, manager.token)).status).toBe(200);
    expect(identityHeaders(lastReceived())).toEqual(identityOf(admin, manager.key.id, 'api_keys:read api_keys:manage'));
  });

  it("refuses with 401 a token that is not the service's: Gatehouse's own API's, or another service's", async () => {
    const before = gateway().upstream.received.length;
    for (const resource of [undefined, BILLING]) {
      const { token } = await keyAndToken(member, resource);
      const refused = await get('/orders/42', token);
      expect(refused.status).toBe(401);
      expect(refused.headers['www-authenticate']).toBe('Bearer realm="gatehouse", error="invalid_token"');
    }
    expect(gateway().upstream.received.length).toBe(before);
  });

  it("refuses a missing or bad token with 401 and its challenge, and never answers with another caller's identity", async () => {
    const first = await keyAndToken(member, ORDERS);
    const second = await keyAndToken(admin, ORDERS, { scopes: ['api_keys:read'] });
    expect((await get('/orders/7', first.token)).status).toBe(200);
    const before = gateway().upstream.received.length;

    const missing = await get('/orders/7');
    expect(missing.status).toBe(401);
    expect(missing.headers['www-authenticate']).toBe('Bearer realm="gatehouse"');
    const bad = await get('/orders/7', `${first.token}x`);
    expect(bad.status).toBe(401);
    expect(bad.headers['www-authenticate']).toBe('Bearer realm="gatehouse", error="invalid_token"');
    expect(gateway().upstream.received.length).toBe(before);

    // Another caller on the same path, within any cache's lifetime: its own identity.
    expect((await get('/orders/7', second.token)).status).toBe(200);
    expect(identityHeaders(lastReceived())).toEqual(identityOf(admin, second.key.id, 'api_keys:read'));
  });

  it('never lets the X-Gatehouse-* headers a client sends reach the service, whatever their spelling', async () => {
    const reader = await keyAndToken(member, ORDERS);
    const manager = await keyAndToken(admin, ORDERS, { scopes: ['api_keys:read', 'api_keys:manage'] });
    const cases: Array<[string, TestUser, { key: { id: string }; token: string }, string]> = [
      ['/orders/1', member, reader, 'api_keys:read integrations:read'],
    ];
    if (options.managePath !== undefined) {
      cases.push([options.managePath, admin, manager, 'api_keys:read api_keys:manage']);
    }
    for (const [path, user, { key, token }, scope] of cases) {
      const response = await get(path, token, SPOOFED);
      expect(response.status).toBe(200);
      const received = identityHeaders(lastReceived()).filter(
        ([name]) => options.dropsInventedNames || IDENTITY.includes(name.replaceAll('_', '-')),
      );
      expect(received).toEqual(identityOf(user, key.id, scope));
    }
    // Without a token, nothing reaches the service at all.
    const before = gateway().upstream.received.length;
    expect((await get('/orders/1', undefined, SPOOFED)).status).toBe(401);
    expect(gateway().upstream.received.length).toBe(before);
  });

  it('lets the client bend neither the audience nor the scope through its path or query', async () => {
    // Another service's token, with that service's audience in the client's query (the issue's `&audience=`).
    const billing = await keyAndToken(member, BILLING);
    const hostile = `/orders/1?audience=${BILLING}&scope=&ignored=`;
    for (const path of [`/orders/1?&audience=${BILLING}`, hostile]) {
      const refused = await get(path, billing.token);
      expect(refused.status).toBe(401);
      expect(refused.headers['www-authenticate']).toBe('Bearer realm="gatehouse", error="invalid_token"');
    }

    // A token without the permission a path needs, asking for less in its query.
    const narrow = await keyAndToken(member, ORDERS, { scopes: ['integrations:read'] });
    const forbidden = await get(`/orders/1?scope=integrations:read&audience=${ORDERS}`, narrow.token);
    expect(forbidden.status).toBe(403);
    expect(forbidden.headers['www-authenticate']).toBe(
      options.challengesOn403
        ? 'Bearer realm="gatehouse", error="insufficient_scope", scope="api_keys:read"'
        : undefined,
    );
    const reader = await keyAndToken(member, ORDERS);
    if (options.managePath !== undefined) {
      const notManager = await get(`${options.managePath}?scope=api_keys:read`, reader.token);
      expect(notManager.status).toBe(403);
      expect(notManager.headers['www-authenticate']).toBe(
        options.challengesOn403
          ? 'Bearer realm="gatehouse", error="insufficient_scope", scope="api_keys:manage"'
          : undefined,
      );
    }

    // The service's own token with the same hostile query: allowed, and the query reaches the service untouched.
    const allowed = await get(`${hostile}&scope=api_keys:manage`, reader.token);
    expect(allowed.status).toBe(200);
    expect(lastReceived()?.url).toBe(`${hostile}&scope=api_keys:manage`);
  });

  it(`refuses a revoked key's token ${options.caches ? 'within FORWARD_AUTH_CACHE_SECONDS + 1 s' : 'at the next request'}`, async () => {
    const windowMs = options.caches ? (t().config.forwardAuthCacheSeconds + 1) * 1000 : 0;
    const { key, token } = await keyAndToken(member, ORDERS);
    expect((await get('/orders/3', token)).status).toBe(200);
    const revokedAt = Date.now(); // when the revocation was asked for: the strictest start to count from
    await t().http().delete(`/v1/user-api-keys/${key.id}`).set('Authorization', `Bearer ${member.token}`).expect(200);
    // The promise is about requests *sent*: none sent later than the window after the revocation is let through.
    let lastAllowedSentMs = -1;
    let status = 200;
    while (status === 200 && Date.now() - revokedAt < windowMs + 4_000) {
      const sentMs = Date.now() - revokedAt;
      status = (await get('/orders/3', token)).status;
      if (status === 200) {
        lastAllowedSentMs = sentMs;
        await pause(20); // the pace of the measurement
      }
    }
    expect(status).toBe(401);
    expect(lastAllowedSentMs).toBeLessThan(windowMs);
  });
}
