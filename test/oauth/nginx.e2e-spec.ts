import { ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, IncomingHttpHeaders, Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { PrincipalService } from '../../src/auth/principal.service';
import { freePort } from '../support/ports';
import { createTestApp, TestApp, TestUser } from '../support/test-app';

/**
 * A real nginx (Debian's package; .ci/run installs it) in front of a small upstream, with auth_request to
 * /v1/forward-auth, running exactly the configuration docs/resource-servers.md#nginx-tested gives.
 */
const NGINX = ['/usr/sbin/nginx', '/usr/bin/nginx'].find((path) => {
  try {
    execFileSync(path, ['-v'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
});

/** The nginx block of the docs page, pointed at this test's processes. */
function documentedConfig(ports: { nginx: number; gatehouse: number; upstream: number }, cacheDir: string): string {
  const page = readFileSync(resolve(__dirname, '../../docs/resource-servers.md'), 'utf8');
  const block = /```nginx\n([\s\S]*?)```/.exec(page)?.[1];
  if (block === undefined) throw new Error('docs/resource-servers.md has no nginx block');
  return block
    .replace('/var/cache/nginx/gatehouse', cacheDir)
    .replace('listen 8080;', `listen 127.0.0.1:${ports.nginx};`)
    .replaceAll('http://gatehouse:3000', `http://127.0.0.1:${ports.gatehouse}`)
    .replaceAll('http://orders-upstream', `http://127.0.0.1:${ports.upstream}`);
}

describe('nginx auth_request in front of an upstream (the documented configuration)', () => {
  let t: TestApp;
  let member: TestUser;
  let dir: string;
  let nginx: ChildProcess;
  let upstream: Server;
  let nginxPort: number;
  const seen: IncomingHttpHeaders[] = [];

  beforeAll(async () => {
    if (NGINX === undefined) throw new Error('nginx not found (apt-get install nginx-light, or nginx)');
    t = await createTestApp();
    const gatehousePort = await freePort();
    await t.app.listen(gatehousePort, '127.0.0.1');
    member = await t.user({ org: 'nginx', role: 'member' });

    upstream = createServer((request, response) => {
      seen.push(request.headers);
      response.end(`upstream ${request.url}`);
    });
    await new Promise<void>((ok) => upstream.listen(0, '127.0.0.1', ok));
    const upstreamPort = (upstream.address() as { port: number }).port;

    nginxPort = await freePort();
    dir = mkdtempSync(join(tmpdir(), 'gatehouse-nginx-'));
    mkdirSync(join(dir, 'logs'));
    const http = documentedConfig(
      { nginx: nginxPort, gatehouse: gatehousePort, upstream: upstreamPort },
      join(dir, 'cache'),
    );
    writeFileSync(
      join(dir, 'nginx.conf'),
      `daemon off; master_process off; worker_processes 1; pid ${dir}/nginx.pid; error_log ${dir}/logs/error.log;
       events { worker_connections 64; }
       http {
         access_log off;
         client_body_temp_path ${dir}/body; proxy_temp_path ${dir}/proxy; fastcgi_temp_path ${dir}/fastcgi;
         uwsgi_temp_path ${dir}/uwsgi; scgi_temp_path ${dir}/scgi;
         ${http}
       }`,
    );
    nginx = spawn(NGINX, ['-p', dir, '-c', join(dir, 'nginx.conf'), '-e', join(dir, 'logs/error.log')], {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    nginx.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const deadline = Date.now() + 10_000;
    for (;;) {
      if (nginx.exitCode !== null) throw new Error(`nginx exited: ${stderr}`);
      try {
        await fetch(`http://127.0.0.1:${nginxPort}/orders/`);
        break;
      } catch {
        if (Date.now() > deadline) throw new Error(`nginx did not listen: ${stderr}`);
        await new Promise((ok) => setTimeout(ok, 50));
      }
    }
  });

  afterAll(async () => {
    nginx?.kill('SIGTERM');
    await new Promise<void>((ok) => (upstream?.listening ? upstream.close(() => ok()) : ok()));
    await t?.close();
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  const get = (path: string, token?: string) =>
    fetch(`http://127.0.0.1:${nginxPort}${path}`, {
      headers: token === undefined ? {} : { authorization: `Bearer ${token}` },
    });

  it('passes an allowed request on with who it is; refuses a missing or bad token with 401 and its challenge', async () => {
    const key = await t.createKey(member, 'nginx');
    const token = await t.exchange(key.value);
    const allowed = await get('/orders/42', token);
    expect(allowed.status).toBe(200);
    expect(await allowed.text()).toBe('upstream /orders/42');
    expect(seen.at(-1)).toMatchObject({
      'x-gatehouse-user-id': member.userId,
      'x-gatehouse-organization-id': member.organizationId,
      'x-gatehouse-scope': 'api_keys:read integrations:read',
    });

    const missing = await get('/orders/42');
    expect(missing.status).toBe(401);
    expect(missing.headers.get('www-authenticate')).toBe('Bearer realm="gatehouse"');
    const bad = await get('/orders/42', `${token}x`);
    expect(bad.status).toBe(401);
    expect(bad.headers.get('www-authenticate')).toBe('Bearer realm="gatehouse", error="invalid_token"');
  });

  it("refuses a token without the location's permission with 403", async () => {
    const key = await t.createKey(member, 'no manage');
    expect((await get('/admin/users', await t.exchange(key.value))).status).toBe(403);
  });

  it('caches an allowed answer, and refuses a revoked key within FORWARD_AUTH_CACHE_SECONDS + 1 s', async () => {
    const key = await t.createKey(member, 'revoked at the gateway');
    const token = await t.exchange(key.value);
    const checks = jest.spyOn(t.get(PrincipalService), 'forResourceServer');
    expect((await get('/orders/1', token)).status).toBe(200);
    expect((await get('/orders/2', token)).status).toBe(200);
    // The second request was answered from nginx's cache (for FORWARD_AUTH_CACHE_SECONDS).
    expect(checks).toHaveBeenCalledTimes(1);
    checks.mockRestore();

    const revokedAt = Date.now(); // when the revocation was asked for: the strictest start to count from
    await t.http().delete(`/v1/user-api-keys/${key.id}`).set('Authorization', `Bearer ${member.token}`).expect(200);
    // nginx counts a stored answer's life in whole seconds, so the promise is about requests *sent*: none sent
    // later than FORWARD_AUTH_CACHE_SECONDS + 1 s after the revocation is let through. (When the refusal arrived
    // also counts the poll's sleep and the round trip, which is not the gateway's doing.)
    let lastAllowedSentMs = -1;
    let status = 200;
    while (status === 200 && Date.now() - revokedAt < 5_000) {
      const sentMs = Date.now() - revokedAt;
      status = (await get('/orders/3', token)).status;
      if (status === 200) {
        lastAllowedSentMs = sentMs;
        await new Promise((ok) => setTimeout(ok, 20));
      }
    }
    expect(status).toBe(401);
    expect(lastAllowedSentMs).toBeLessThan((t.config.forwardAuthCacheSeconds + 1) * 1000);
  });
});
