import { ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TokenAuthenticator } from '../../src/auth/token-authenticator';
import { gatewayContract, identityHeaders, ORDERS, startGatehouse } from '../support/gateway-contract';
import { documentedBlock, EchoUpstream, send, startEchoUpstream, waitUntilListening } from '../support/gateways';
import { findBinary, withTool } from '../support/tools';
import { freePort } from '../support/ports';
import type { TestApp } from '../support/test-app';

/**
 * A real nginx (Debian's nginx-light; .ci/run installs it) in front of a small upstream, with auth_request to
 * /v1/forward-auth, running exactly the configuration docs/resource-servers.md#nginx-tested gives: the gateway contract
 * (test/support/gateway-contract.ts), then its cache.
 */
const NGINX = findBinary(['/usr/sbin/nginx', '/usr/bin/nginx'], ['-v']);

interface RunningNginx {
  port: number;
  stop(): void;
}

/** Starts nginx with `http` (the docs' block, pointed at this test's processes) inside a minimal main configuration. */
async function startNginx(http: string): Promise<RunningNginx> {
  if (NGINX === undefined) throw new Error('nginx not found (apt-get install nginx-light)');
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'gatehouse-nginx-'));
  mkdirSync(join(dir, 'logs'));
  writeFileSync(
    join(dir, 'nginx.conf'),
    `daemon off; master_process off; worker_processes 1; pid ${dir}/nginx.pid; error_log ${dir}/logs/error.log;
     events { worker_connections 64; }
     http {
       access_log off;
       client_body_temp_path ${dir}/body; proxy_temp_path ${dir}/proxy; fastcgi_temp_path ${dir}/fastcgi;
       uwsgi_temp_path ${dir}/uwsgi; scgi_temp_path ${dir}/scgi;
       ${http.replace('/var/cache/nginx/gatehouse', join(dir, 'cache')).replace('listen 8080;', `listen 127.0.0.1:${port};`)}
     }`,
  );
  const nginx: ChildProcess = spawn(
    NGINX,
    ['-p', dir, '-c', join(dir, 'nginx.conf'), '-e', join(dir, 'logs/error.log')],
    {
      stdio: ['ignore', 'ignore', 'pipe'],
    },
  );
  let stderr = '';
  nginx.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const stop = () => {
    nginx.kill('SIGTERM');
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await waitUntilListening(
      () => send(port, '/'),
      () => (nginx.exitCode === null ? undefined : `nginx exited: ${stderr}`),
    );
  } catch (error) {
    stop();
    throw error;
  }
  return { port, stop };
}

/** The docs' nginx block, pointed at Gatehouse and the upstream of this test. */
function documentedConfig(gatehousePort: number, upstreamPort: number): string {
  return documentedBlock('### nginx', 'nginx')
    .replaceAll('http://gatehouse:3000', `http://127.0.0.1:${gatehousePort}`)
    .replaceAll('http://orders-upstream:8000', `http://127.0.0.1:${upstreamPort}`);
}

withTool(
  describe,
  NGINX !== undefined,
  'nginx',
  'apt-get install nginx-light',
)('nginx auth_request in front of an upstream (the documented configuration)', () => {
  let t: TestApp;
  let gatehousePort: number;
  let upstream: EchoUpstream;
  let nginx: RunningNginx;

  beforeAll(async () => {
    // nginx sends the client's address in X-Forwarded-For (the documented block), which Gatehouse trusts from it.
    ({ t, port: gatehousePort } = await startGatehouse({ TRUST_PROXY: 'loopback' }));
    upstream = await startEchoUpstream();
    nginx = await startNginx(documentedConfig(gatehousePort, upstream.port));
  });

  afterAll(async () => {
    nginx?.stop();
    await upstream?.close();
    await t?.close();
  });

  gatewayContract(() => ({ t, port: nginx.port, upstream }), {
    dropsInventedNames: false,
    caches: true,
    challengesOn403: false,
    managePath: '/admin/users',
  });

  it('answers from its cache within FORWARD_AUTH_CACHE_SECONDS, per token', async () => {
    const member = await t.user({ org: 'nginx-cache', role: 'member' });
    const token = await t.exchange((await t.createKey(member, 'cached')).value, { resource: ORDERS });
    const checks = jest.spyOn(t.get(TokenAuthenticator), 'authenticate');
    try {
      expect((await send(nginx.port, '/orders/1', [['Authorization', `Bearer ${token}`]])).status).toBe(200);
      expect((await send(nginx.port, '/orders/2', [['Authorization', `Bearer ${token}`]])).status).toBe(200);
      // The second request was answered from nginx's cache (for FORWARD_AUTH_CACHE_SECONDS).
      expect(checks).toHaveBeenCalledTimes(1);
    } finally {
      checks.mockRestore();
    }
  });

  it("serves no one another caller's identity even with nginx's default cache key (Gatehouse's Vary: Authorization)", async () => {
    // The documented block without its proxy_cache_key lines: nginx keys the answer by the client's URI alone.
    const unkeyed = documentedConfig(gatehousePort, upstream.port)
      .split('\n')
      .filter((line) => !line.includes('proxy_cache_key'))
      .join('\n');
    expect(unkeyed).not.toBe(documentedConfig(gatehousePort, upstream.port));
    const plain = await startNginx(unkeyed);
    try {
      const first = await t.user({ org: 'nginx-vary', role: 'member' });
      const second = await t.user({ org: 'nginx-vary', role: 'admin' });
      const firstToken = await t.exchange((await t.createKey(first, 'first')).value, { resource: ORDERS });
      const secondToken = await t.exchange((await t.createKey(second, 'second')).value, { resource: ORDERS });
      expect((await send(plain.port, '/orders/9', [['Authorization', `Bearer ${firstToken}`]])).status).toBe(200);
      const before = upstream.received.length;
      const anonymous = await send(plain.port, '/orders/9');
      expect(anonymous.status).toBe(401);
      expect(upstream.received.length).toBe(before);
      expect((await send(plain.port, '/orders/9', [['Authorization', `Bearer ${secondToken}`]])).status).toBe(200);
      expect(identityHeaders(upstream.received.at(-1))).toContainEqual(['x-gatehouse-user-id', second.userId]);
    } finally {
      plain.stop();
    }
  });

  it("passes a rate-limited key's 429 on with Retry-After and the RateLimit fields, and what is left on each 200", async () => {
    const member = await t.user({ org: 'nginx-rate', role: 'member' });
    const key = await t.createKey(member, 'limited', { rate_limit: { requests: 3, window_seconds: 60 } });
    // The exchange is one of the key's three requests: two are left for the gateway.
    const token = await t.exchange(key.value, { resource: ORDERS });
    const before = upstream.received.length;
    const auth: Array<[string, string]> = [['Authorization', `Bearer ${token}`]];
    const first = await send(nginx.port, '/orders/1', auth);
    expect(first.status).toBe(200);
    expect(first.headers['ratelimit-policy']).toBe('"api-key";q=3;w=60');
    expect(first.headers['ratelimit']).toMatch(/^"api-key";r=1;t=\d+$/);
    const second = await send(nginx.port, '/orders/2', auth);
    expect(second.status).toBe(200);
    expect(second.headers['ratelimit']).toMatch(/^"api-key";r=0;t=\d+$/);
    // Not answered from nginx's cache: the answers of a rate-limited key say X-Accel-Expires: 0.
    const refused = await send(nginx.port, '/orders/3', auth);
    expect(refused.status).toBe(429);
    expect(Number(refused.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(Number(refused.headers['retry-after'])).toBeLessThanOrEqual(60);
    expect(refused.headers['ratelimit-policy']).toBe('"api-key";q=3;w=60');
    expect(refused.headers['ratelimit']).toMatch(/^"api-key";r=0;t=\d+$/);
    expect(upstream.received.length).toBe(before + 2);
    // A key without a limit: no such fields.
    const plain = await t.exchange((await t.createKey(member, 'plain')).value, { resource: ORDERS });
    const unlimited = await send(nginx.port, '/orders/4', [['Authorization', `Bearer ${plain}`]]);
    expect(unlimited.status).toBe(200);
    expect(unlimited.headers['ratelimit']).toBeUndefined();
    expect(unlimited.headers['retry-after']).toBeUndefined();
  });

  it('lets a key with an allowlist through from inside it only: the address nginx forwards, not one the client writes', async () => {
    const member = await t.user({ org: 'nginx-allowlist', role: 'member' });
    const loopback = await t.createKey(member, 'loopback', { allowed_cidrs: ['127.0.0.0/8', '::1'] });
    const elsewhere = await t.createKey(member, 'elsewhere', { allowed_cidrs: ['203.0.113.0/24'] });
    const exchangeFrom = async (value: string, address: string) =>
      (
        await t
          .http()
          .post('/v1/token')
          .set('Authorization', `ApiKey ${value}`)
          .set('X-Forwarded-For', address)
          .send({ resource: ORDERS })
          .expect(200)
      ).body.access_token as string;
    const inside = await exchangeFrom(loopback.value, '127.0.0.1');
    const outside = await exchangeFrom(elsewhere.value, '203.0.113.9');
    const before = upstream.received.length;
    expect((await send(nginx.port, '/orders/5', [['Authorization', `Bearer ${inside}`]])).status).toBe(200);
    expect((await send(nginx.port, '/orders/6', [['Authorization', `Bearer ${outside}`]])).status).toBe(403);
    const spoofed = await send(nginx.port, '/orders/7', [
      ['Authorization', `Bearer ${outside}`],
      ['X-Forwarded-For', '203.0.113.9'],
    ]);
    expect(spoofed.status).toBe(403);
    expect(upstream.received.length).toBe(before + 1);
  });
});
