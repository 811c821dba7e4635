import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { decodeJwt } from 'jose';
import { runTestCli } from '../support/cli';
import { ResourceServersService } from '../../src/resource-servers/resource-servers.service';
import { ORDERS } from '../support/gateway-contract';
import { documentedBlock, documentedBlocks } from '../support/gateways';
import { findBinary, withTool } from '../support/tools';
import { freePort } from '../support/ports';
import { createTestApp, TestApp, TestUser } from '../support/test-app';

/**
 * docs/resource-servers.md as a platform team follows it, run as written against a local http:// Gatehouse: the
 * walk-through's registration command (`npx gatehouse ...`, run in-process) and its token command (bash and curl), and
 * the openid-client example of #client-credentials (below). The gateway blocks
 * themselves run in nginx.e2e-spec.ts, caddy-gateway.e2e-spec.ts and traefik-envoy-gateway.e2e-spec.ts.
 */
const WALKTHROUGH = '### From registration to a working gateway';
const run = promisify(execFile);
const CURL = findBinary(['/usr/bin/curl', '/usr/local/bin/curl'], ['--version']);

/** The words of one shell command line (quotes '' and "" without escapes, as the docs write them). */
function words(line: string): string[] {
  return [...line.matchAll(/"([^"]*)"|'([^']*)'|(\S+)/g)].map((match) => match[1] ?? match[2] ?? match[3]);
}

describe('the walk-through of docs/resource-servers.md, run as written', () => {
  let t: TestApp;
  let issuer: string;
  let port: number;
  let admin: TestUser;

  beforeAll(async () => {
    port = await freePort();
    issuer = `http://localhost:${port}`;
    t = await createTestApp({ env: { JWT_ISSUER: issuer, PUBLIC_BASE_URL: issuer } });
    await t.app.listen(port, '127.0.0.1');
    admin = await t.user({ org: 'walkthrough', role: 'admin' });
  });

  afterAll(() => t?.close());

  /** The service of step 1, for a test run on its own. */
  const registered = async () => {
    const servers = t.get(ResourceServersService);
    if (!(await servers.isRegistered(ORDERS))) await servers.register('Orders API', ORDERS);
  };

  /** Whether forward auth, asked as the docs' gateways ask, lets `token` through. */
  const forwardAuth = (token: string) =>
    t.http().get(`/v1/forward-auth?audience=${ORDERS}&scope=api_keys:read`).set('Authorization', `Bearer ${token}`);

  it('step 1 registers the service with `npx gatehouse resource-server add`', async () => {
    const lines = documentedBlocks(WALKTHROUGH, 'sh')[0]
      .split('\n')
      .filter((line) => line.trim() !== '');
    expect(lines).toHaveLength(1);
    const [npx, bin, ...argv] = words(lines[0]);
    expect([npx, bin]).toEqual(['npx', 'gatehouse']);
    const result = await runTestCli(argv, t.env);
    expect(result).toMatchObject({ exitCode: 0 });
    expect(JSON.parse(result.stdout)).toMatchObject({
      resource_server: { audience: ORDERS },
      client_secret: expect.stringMatching(/^gh_rs_/),
    });
  });

  withTool(
    it,
    CURL !== undefined,
    'curl',
    'apt-get install curl',
  )(
    "step 3 mints a token for the service with curl, which forward auth lets through at the service's gateway",
    async () => {
      await registered();
      const key = await t.createKey(admin, 'walkthrough curl');
      const script = documentedBlocks(WALKTHROUGH, 'sh')[1].replaceAll('localhost:3000', `127.0.0.1:${port}`);
      expect(script).toContain('TOKEN=$(curl');
      const { stdout } = await run('bash', ['-euo', 'pipefail', '-c', `${script}\nprintf %s "$TOKEN"`], {
        env: { ...process.env, KEY: key.value },
      });
      expect(decodeJwt(stdout)).toMatchObject({ aud: ORDERS, client_id: key.id });
      await forwardAuth(stdout).expect(200);
    },
  );
});

/**
 * The openid-client example of #client-credentials on a server where nothing is registered, as a reader who comes from
 * the README's walk-through runs it: the section's registration command, then the example (node and the real
 * openid-client, only the issuer's port changed). Without the registration the token endpoint answers invalid_target.
 */
describe('the openid-client example of docs/resource-servers.md#client-credentials, run as written', () => {
  const SECTION = '## Client credentials';
  let t: TestApp;
  let issuer: string;
  let admin: TestUser;
  let dir: string;

  beforeAll(async () => {
    const port = await freePort();
    issuer = `http://localhost:${port}`;
    t = await createTestApp({ env: { JWT_ISSUER: issuer, PUBLIC_BASE_URL: issuer } });
    await t.app.listen(port, '127.0.0.1');
    admin = await t.user({ org: 'openid-client', role: 'admin' });
    // Inside node_modules/.cache, so that `import 'openid-client'` resolves as in a project that installed it.
    const cache = resolve(__dirname, '../../node_modules/.cache');
    mkdirSync(cache, { recursive: true });
    dir = mkdtempSync(join(cache, 'gatehouse-docs-example-'));
  });

  afterAll(async () => {
    rmSync(dir, { recursive: true, force: true });
    await t?.close();
  });

  /** `node token.mjs` as the docs say, with GATEHOUSE_API_KEY set: its token, or its failure's output. */
  async function runExample(key: string): Promise<{ token?: string; failure?: string }> {
    const example = documentedBlock(SECTION, 'ts');
    expect(example).toContain("new URL('http://localhost:3000')");
    writeFileSync(
      join(dir, 'token.mjs'),
      `${example.replace('http://localhost:3000', issuer)}\nprocess.stdout.write(access_token);\n`,
    );
    try {
      const { stdout } = await run(process.execPath, [join(dir, 'token.mjs')], {
        env: { ...process.env, GATEHOUSE_API_KEY: key },
      });
      return { token: stdout };
    } catch (error) {
      return { failure: String((error as { stderr?: string }).stderr ?? error) };
    }
  }

  it('mints a token for the service once the section registered it, and fails with invalid_target before', async () => {
    const key = await t.createKey(admin, 'docs openid-client');
    expect(await t.get(ResourceServersService).isRegistered(ORDERS)).toBe(false);
    const before = await runExample(key.value);
    expect(before.token).toBeUndefined();
    expect(before.failure).toContain('invalid_target');

    // The section's registration, as written (`npx gatehouse ...`, run in-process).
    const lines = documentedBlock(SECTION, 'sh')
      .split('\n')
      .filter((line) => line.trim() !== '');
    expect(lines).toHaveLength(1);
    const [npx, bin, ...argv] = words(lines[0]);
    expect([npx, bin]).toEqual(['npx', 'gatehouse']);
    expect(await runTestCli(argv, t.env)).toMatchObject({ exitCode: 0 });

    const { token, failure } = await runExample(key.value);
    expect(failure).toBeUndefined();
    expect(decodeJwt(token!)).toMatchObject({ iss: issuer, aud: ORDERS, scope: 'api_keys:read', client_id: key.id });
    await t
      .http()
      .get(`/v1/forward-auth?audience=${ORDERS}&scope=api_keys:read`)
      .set('Authorization', `Bearer ${token}`)
      .expect(200);
  });
});
