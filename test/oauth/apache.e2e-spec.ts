import { ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, IncomingHttpHeaders, Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { MetricValueWithName } from 'prom-client';
import { Metrics } from '../../src/metrics/metrics';
import { ResourceServersService } from '../../src/resource-servers/resource-servers.service';
import { LocalCa, OPENSSL } from '../support/local-ca';
import { freePort } from '../support/ports';
import { createTestApp, TestApp, TestUser } from '../support/test-app';
import { TlsProxy } from '../support/tls-proxy';
import { findBinary, withTool } from '../support/tools';
import { pause, waitFor } from '../support/wait';

/**
 * Apache with mod_auth_openidc (Debian's apache2 and libapache2-mod-auth-openidc; .ci/run installs them) as a resource
 * server in front of a small upstream, in both of its modes, running the configurations of
 * docs/resource-servers.md#apache-mod_auth_openidc against Gatehouse behind TLS (a certificate of a CA of this run).
 */
const APACHE = findBinary(['/usr/sbin/apache2'], ['-v']);
const MODULES = '/usr/lib/apache2/modules';
const MISSING =
  APACHE === undefined
    ? 'apache2'
    : !existsSync(join(MODULES, 'mod_auth_openidc.so'))
      ? 'mod_auth_openidc'
      : OPENSSL === undefined
        ? 'openssl'
        : undefined;
const INSTALL = 'apt-get install --no-install-recommends apache2 libapache2-mod-auth-openidc openssl';

/** The audience the documented configurations protect. */
const AUDIENCE = 'https://orders.example.com';
const OTHER_AUDIENCE = 'https://billing.example.com';

/** The three apache blocks of the docs' Apache section: the two modes and the secrets file. */
function documentedBlocks(): { jwks: string; introspection: string; secrets: string } {
  const page = readFileSync(resolve(__dirname, '../../docs/resource-servers.md'), 'utf8');
  const start = page.indexOf('\n## Apache (mod_auth_openidc)\n');
  if (start < 0) throw new Error('docs/resource-servers.md has no "Apache (mod_auth_openidc)" section');
  const end = page.indexOf('\n## ', start + 1);
  const section = page.slice(start, end < 0 ? undefined : end);
  const blocks = [...section.matchAll(/```apache\n([\s\S]*?)```/g)].map((match) => match[1]);
  const one = (what: string, test: (block: string) => boolean): string => {
    const found = blocks.filter(test);
    if (found.length !== 1) throw new Error(`the Apache section has ${found.length} blocks for ${what}, not 1`);
    return found[0];
  };
  return {
    jwks: one('the JWKS mode', (block) => block.includes('OIDCOAuthVerifyJwksUri ')),
    introspection: one('introspection', (block) => block.includes('OIDCOAuthIntrospectionEndpoint ')),
    secrets: one('the secrets file', (block) => block.startsWith('# /etc/apache2/gatehouse-orders.secret.conf')),
  };
}

/** A documented virtual host, pointed at this test's processes. */
function pointed(
  block: string,
  places: { port: number; gatehouse: string; caFile: string; secrets: string; upstream: string },
): string {
  if (block.split('<VirtualHost *:443>').length !== 2) throw new Error('expected one <VirtualHost *:443>');
  return block
    .replace('<VirtualHost *:443>', `<VirtualHost 127.0.0.1:${places.port}>`)
    .replaceAll('https://gatehouse.example.com', places.gatehouse)
    .replaceAll('/etc/ssl/certs/gatehouse-ca.pem', places.caFile)
    .replaceAll('/etc/apache2/gatehouse-orders.secret.conf', places.secrets)
    .replaceAll('http://orders-upstream:8080', places.upstream);
}

/** The documented secrets file with this run's values in place of its `<...>` placeholders. */
function filledSecrets(block: string, values: Record<string, string>): string {
  const filled = new Set<string>();
  const text = block
    .split('\n')
    .map((line) => {
      const match = /^(\w+) <[^>]*>$/.exec(line.trim());
      if (match === null) return line;
      const value = values[match[1]];
      if (value === undefined) throw new Error(`no value for ${match[1]} in the secrets file`);
      filled.add(match[1]);
      return `${match[1]} "${value}"`;
    })
    .join('\n');
  const unfilled = Object.keys(values).filter((name) => !filled.has(name));
  if (unfilled.length > 0) throw new Error(`the secrets file has no ${unfilled.join(', ')} <...> line`);
  return text;
}

withTool(
  describe,
  MISSING === undefined,
  `Apache mod_auth_openidc (${MISSING})`,
  INSTALL,
)('Apache mod_auth_openidc as a resource server (the documented configurations)', () => {
  let t: TestApp;
  let member: TestUser;
  let ca: LocalCa;
  let tls: TlsProxy;
  let dir: string;
  let apache: ChildProcess;
  let upstream: Server;
  let interval: number;
  const ports = { jwks: 0, introspection: 0 };
  const seen: IncomingHttpHeaders[] = [];

  beforeAll(async () => {
    if (MISSING !== undefined) throw new Error(`${MISSING} not found (${INSTALL})`);
    const blocks = documentedBlocks();
    interval = Number(/^\s*OIDCOAuthTokenIntrospectionInterval (\d+)$/m.exec(blocks.introspection)?.[1]);
    if (!(interval >= 1)) throw new Error('the introspection block has no OIDCOAuthTokenIntrospectionInterval >= 1');

    // Gatehouse behind TLS: its issuer and endpoints are the proxy's https:// origin.
    ca = LocalCa.create();
    const gatehousePort = await freePort();
    tls = new TlsProxy({ host: '127.0.0.1', port: gatehousePort }, { cert: ca.cert, key: ca.key });
    await tls.start();
    t = await createTestApp({ env: { JWT_ISSUER: tls.origin, PUBLIC_BASE_URL: tls.origin } });
    await t.app.listen(gatehousePort, '127.0.0.1');
    member = await t.user({ org: 'apache', role: 'member' });
    const servers = t.get(ResourceServersService);
    const orders = await servers.register('Orders', AUDIENCE);
    await servers.register('Billing', OTHER_AUDIENCE);

    upstream = createServer((request, response) => {
      seen.push(request.headers);
      response.end(`upstream ${request.url}`);
    });
    await new Promise<void>((ok) => upstream.listen(0, '127.0.0.1', ok));
    const upstreamOrigin = `http://127.0.0.1:${(upstream.address() as { port: number }).port}`;

    dir = mkdtempSync(join(tmpdir(), 'gatehouse-apache-'));
    // Apache started as root serves as www-data, which must still reach its runtime directory (the secrets file stays
    // root's: Apache reads its configuration before it switches).
    chmodSync(dir, 0o755);
    const secrets = join(dir, 'gatehouse-orders.secret.conf');
    writeFileSync(
      secrets,
      filledSecrets(blocks.secrets, {
        OIDCOAuthClientID: orders.clientId,
        OIDCOAuthClientSecret: orders.clientSecret,
        OIDCCryptoPassphrase: randomBytes(32).toString('base64'),
      }),
      { mode: 0o600 },
    );
    ports.jwks = await freePort();
    ports.introspection = await freePort();
    const places = { gatehouse: tls.origin, caFile: ca.caFile, secrets, upstream: upstreamOrigin };
    const asRoot = process.getuid?.() === 0;
    writeFileSync(
      join(dir, 'apache2.conf'),
      [
        `ServerRoot ${dir}`,
        'ServerName 127.0.0.1',
        `DefaultRuntimeDir ${dir}`,
        `PidFile ${dir}/apache2.pid`,
        `ErrorLog ${dir}/error.log`,
        'LogLevel warn',
        ...(asRoot ? ['User www-data', 'Group www-data'] : []),
        ...['mpm_event', 'authn_core', 'authz_core', 'headers', 'proxy', 'proxy_http', 'auth_openidc'].map(
          (name) => `LoadModule ${name}_module ${MODULES}/mod_${name}.so`,
        ),
        `Listen 127.0.0.1:${ports.jwks}`,
        `Listen 127.0.0.1:${ports.introspection}`,
        pointed(blocks.jwks, { ...places, port: ports.jwks }),
        pointed(blocks.introspection, { ...places, port: ports.introspection }),
      ].join('\n'),
    );
    // One process (-X), in the foreground; a clean environment (no proxy variables for curl to follow).
    apache = spawn(APACHE!, ['-X', '-f', join(dir, 'apache2.conf')], {
      env: { PATH: process.env.PATH, LANG: 'C' },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    apache.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    for (const port of [ports.jwks, ports.introspection]) {
      await waitFor(
        `apache2 listening on ${port}`,
        async () => {
          if (apache.exitCode !== null) throw new Error('apache2 exited');
          return fetch(`http://127.0.0.1:${port}/`).then(
            () => true,
            () => undefined,
          );
        },
        { everyMs: 50 },
      ).catch((error: Error) => {
        throw new Error(`${error.message}: ${stderr}${errorLog()}`, { cause: error });
      });
    }
  }, 30_000); // openssl, the app, then Apache: more than the default 5 s on a busy machine

  afterAll(async () => {
    if (apache !== undefined && apache.exitCode === null) {
      const exited = new Promise((ok) => apache.once('exit', ok));
      apache.kill('SIGTERM');
      const stuck = setTimeout(() => apache.kill('SIGKILL'), 3_000);
      await exited;
      clearTimeout(stuck);
    }
    await new Promise<void>((ok) => (upstream?.listening ? upstream.close(() => ok()) : ok()));
    await tls?.close();
    await t?.close();
    ca?.remove();
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  const errorLog = (): string => {
    try {
      return readFileSync(join(dir, 'error.log'), 'utf8');
    } catch {
      return '';
    }
  };

  const get = (port: number, token?: string, headers: Record<string, string> = {}) =>
    fetch(`http://127.0.0.1:${port}/orders/42`, {
      headers: token === undefined ? headers : { ...headers, authorization: `Bearer ${token}` },
    });

  /** Introspection calls Gatehouse has answered, as its metrics count them. */
  async function introspections(): Promise<number> {
    const metric = t.get(Metrics).registry.getSingleMetric('gatehouse_http_request_duration_seconds');
    // A histogram's values carry their series' name (_bucket, _sum, _count).
    const values = (await metric!.get()).values as Array<MetricValueWithName<string>>;
    return values
      .filter((v) => v.metricName === 'gatehouse_http_request_duration_seconds_count')
      .filter((v) => v.labels.route === '/oauth/introspect')
      .reduce((sum, v) => sum + v.value, 0);
  }

  /** Tokens each mode must refuse with 401, whatever their signature says. */
  async function refusedTokens(): Promise<Array<[string, string | undefined]>> {
    const key = await t.createKey(member, 'refused');
    const own = await t.exchange(key.value, { resource: AUDIENCE });
    return [
      ['no token', undefined],
      ['a tampered token', `${own.slice(0, -2)}${own.at(-2) === 'A' ? 'B' : 'A'}${own.at(-1)}`],
      ["Gatehouse's own audience", await t.exchange(key.value)],
      ["another resource server's audience", await t.exchange(key.value, { resource: OTHER_AUDIENCE })],
      ['no api_keys:read', await t.exchange(key.value, { resource: AUDIENCE, scope: 'integrations:read' })],
      ['a session token', member.token],
    ];
  }

  async function revoke(keyId: string): Promise<void> {
    await t.http().delete(`/v1/user-api-keys/${keyId}`).set('Authorization', `Bearer ${member.token}`).expect(200);
  }

  describe('JWKS mode', () => {
    it("passes a token for its audience on with the token's claims; a client's own claim headers are removed", async () => {
      const key = await t.createKey(member, 'jwks');
      const token = await t.exchange(key.value, { resource: AUDIENCE });
      const response = await get(ports.jwks, token, { OIDC_CLAIM_sub: 'someone-else' });
      expect(response.status).toBe(200);
      expect(await response.text()).toBe('upstream /orders/42');
      expect(seen.at(-1)).toMatchObject({
        oidc_claim_sub: member.userId,
        oidc_claim_org: member.organizationId,
        oidc_claim_client_id: key.id,
        oidc_claim_aud: AUDIENCE,
        oidc_claim_scope: 'api_keys:read integrations:read',
      });
    });

    it('refuses with 401 every token that is not for its audience with api_keys:read', async () => {
      for (const [what, token] of await refusedTokens()) {
        const response = await get(ports.jwks, token);
        expect([what, response.status]).toEqual([what, 401]);
        expect([what, response.headers.get('www-authenticate')]).toEqual([what, expect.stringMatching(/^Bearer /)]);
      }
    });

    it("accepts a revoked key's token until it expires: what this mode cannot do better", async () => {
      const key = await t.createKey(member, 'revoked under JWKS');
      const token = await t.exchange(key.value, { resource: AUDIENCE });
      await revoke(key.id);
      expect((await get(ports.jwks, token)).status).toBe(200);
    });
  });

  describe('introspection mode', () => {
    it('passes a token for its audience on, and introspects it once for requests within the interval', async () => {
      const key = await t.createKey(member, 'introspected');
      const token = await t.exchange(key.value, { resource: AUDIENCE });
      const before = await introspections();
      const started = Date.now();
      const statuses: number[] = [];
      for (let i = 0; i < 10; i += 1) statuses.push((await get(ports.introspection, token)).status);
      expect(statuses).toEqual(Array(10).fill(200));
      expect(seen.at(-1)).toMatchObject({ oidc_claim_sub: member.userId, oidc_claim_client_id: key.id });
      // Cached (the answer is kept for whole seconds: one more call if the requests crossed a second's end).
      const calls = (await introspections()) - before;
      expect(calls).toBeGreaterThanOrEqual(1);
      expect(calls).toBeLessThanOrEqual(Math.ceil((Date.now() - started) / 1000 / interval) + 1);
      expect(calls).toBeLessThan(10);
      expect(errorLog()).not.toMatch(/could NOT store|key size is too large/);
    });

    it('refuses with 401 every token that is not for its audience with api_keys:read', async () => {
      for (const [what, token] of await refusedTokens()) {
        const response = await get(ports.introspection, token);
        expect([what, response.status]).toEqual([what, 401]);
        expect([what, response.headers.get('www-authenticate')]).toEqual([what, expect.stringMatching(/^Bearer /)]);
      }
    });

    it("refuses a revoked key's token for every request sent later than the interval + 1 s after the revocation", async () => {
      const key = await t.createKey(member, 'revoked under introspection');
      const token = await t.exchange(key.value, { resource: AUDIENCE });
      expect((await get(ports.introspection, token)).status).toBe(200); // introspected and cached
      const revokedAt = Date.now(); // when the revocation was asked for: the strictest start to count from
      await revoke(key.id);
      let lastAllowedSentMs = -1;
      let status = 200;
      while (status === 200 && Date.now() - revokedAt < (interval + 4) * 1000) {
        const sentMs = Date.now() - revokedAt;
        status = (await get(ports.introspection, token)).status;
        if (status === 200) {
          lastAllowedSentMs = sentMs;
          await pause(20); // the pace of the measurement
        }
      }
      expect(status).toBe(401);
      expect(lastAllowedSentMs).toBeLessThan((interval + 1) * 1000);
    }, 20_000);
  });
});
