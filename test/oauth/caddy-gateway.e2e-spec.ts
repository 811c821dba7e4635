import { ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gatewayContract, startGatehouse } from '../support/gateway-contract';
import { documentedBlock, EchoUpstream, send, startEchoUpstream, waitUntilListening } from '../support/gateways';
import { findBinary, withTool } from '../support/tools';
import { freePort } from '../support/ports';
import type { TestApp } from '../support/test-app';

/**
 * A real Caddy (Debian's package; .ci/run installs it) in front of a small upstream, with forward_auth to
 * /v1/forward-auth, running exactly the Caddyfile of docs/resource-servers.md#caddy-tested: the gateway contract
 * (test/support/gateway-contract.ts). Caddy does not cache.
 */
const CADDY = findBinary(['/usr/bin/caddy', '/usr/local/bin/caddy'], ['version']);

withTool(
  describe,
  CADDY !== undefined,
  'caddy',
  'apt-get install caddy',
)('Caddy forward_auth in front of an upstream (the documented configuration)', () => {
  let t: TestApp;
  let upstream: EchoUpstream;
  let dir: string;
  let caddy: ChildProcess | undefined;
  let port: number;

  beforeAll(async () => {
    if (CADDY === undefined) throw new Error('caddy not found (apt-get install caddy)');
    let gatehousePort: number;
    ({ t, port: gatehousePort } = await startGatehouse());
    upstream = await startEchoUpstream();
    port = await freePort();
    dir = mkdtempSync(join(tmpdir(), 'gatehouse-caddy-'));
    const site = documentedBlock('### Caddy', 'caddyfile')
      .replace(/^:8080 \{/m, `:${port} {\n\tbind 127.0.0.1`)
      .replaceAll('gatehouse:3000', `127.0.0.1:${gatehousePort}`)
      .replaceAll('orders-upstream:8000', `127.0.0.1:${upstream.port}`);
    // Global options for a test: no admin endpoint, no certificates; HOME and XDG_* keep its files in `dir`.
    writeFileSync(join(dir, 'Caddyfile'), `{\n\tadmin off\n\tauto_https off\n}\n\n${site}`);
    const spawned = spawn(CADDY, ['run', '--config', join(dir, 'Caddyfile'), '--adapter', 'caddyfile'], {
      stdio: ['ignore', 'ignore', 'pipe'],
      env: { ...process.env, HOME: dir, XDG_CONFIG_HOME: dir, XDG_DATA_HOME: dir },
    });
    caddy = spawned;
    let stderr = '';
    spawned.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    await waitUntilListening(
      () => send(port, '/'),
      () => (spawned.exitCode === null ? undefined : `caddy exited: ${stderr}`),
    );
  });

  afterAll(async () => {
    caddy?.kill('SIGTERM');
    await upstream?.close();
    await t?.close();
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  gatewayContract(() => ({ t, port, upstream }), {
    dropsInventedNames: true,
    caches: false,
    challengesOn403: true,
    managePath: '/admin/users',
  });
});
