import { DataSource } from 'typeorm';
import type { CliResult } from '../../src/cli';
import { runTestCli } from '../support/cli';
import type { Environment } from '../../src/config/configuration';
import { ResourceServer } from '../../src/resource-servers/resource-server.entity';
import type {
  ResourceServerCredentialsView,
  ResourceServerView,
} from '../../src/resource-servers/resource-server.command';
import { cliChecks } from '../support/cli';
import { UUID } from '../support/http-assertions';
import { createTestApp, createTestDatabase, TestApp, TestDatabase, testEnvironment } from '../support/test-app';
import { SET_UP_TIMEOUT_MS } from '../support/timeouts';

/** `gatehouse resource-server ...` (docs/resource-servers.md#registering-a-resource-server), on the test database. */
describe('admin CLI: resource-server', () => {
  let database: TestDatabase;
  let env: Environment;
  let t: TestApp;

  beforeAll(async () => {
    database = createTestDatabase();
    env = testEnvironment(database);
    t = await createTestApp({ database });
    await t.user({ org: 'cli-resource-servers' });
  }, SET_UP_TIMEOUT_MS);
  afterAll(async () => {
    await t.close();
    await database.drop();
  });

  const cli = (...argv: string[]): Promise<CliResult> => runTestCli(['resource-server', ...argv], env);
  const { ok, fails } = cliChecks(cli);
  type Credentials = ResourceServerCredentialsView;
  type Listed = { resource_servers: ResourceServerView[] };
  const introspect = (clientId: string, clientSecret: string) =>
    t
      .http()
      .post('/oauth/introspect')
      .type('form')
      .send(new URLSearchParams({ token: 'x', client_id: clientId, client_secret: clientSecret }).toString());

  it('add prints the server, its client_id and its client_secret once; only an HMAC is stored', async () => {
    const added = await ok<Credentials>('add', '--name', 'Orders API', '--audience', 'https://orders.cli.example.com');
    expect(added).toEqual({
      resource_server: {
        id: expect.stringMatching(UUID),
        name: 'Orders API',
        audience: 'https://orders.cli.example.com',
        created_at: expect.any(String),
        secret_rotated_at: expect.any(String),
      },
      client_id: added.resource_server.id,
      client_secret: expect.stringMatching(/^gh_rs_[A-Za-z0-9_-]{43}$/),
    });
    await introspect(added.client_id, added.client_secret).expect(200);
    const stored = await t.get(DataSource).getRepository(ResourceServer).findOneByOrFail({ id: added.client_id });
    expect(JSON.stringify(stored)).not.toContain(added.client_secret);

    const listed = await ok<Listed>('list');
    expect(listed.resource_servers).toContainEqual(added.resource_server);
    expect(JSON.stringify(listed)).not.toContain('client_secret');
  });

  it('rotate-secret prints a new secret; the old one stops at once; remove stops the new one', async () => {
    const added = await ok<Credentials>('add', '--name', 'Billing', '--audience', 'http://127.0.0.1:9000/billing');
    const rotated = await ok<Credentials>('rotate-secret', '--audience', 'http://127.0.0.1:9000/billing');
    expect(rotated.client_id).toBe(added.client_id);
    expect(rotated.client_secret).not.toBe(added.client_secret);
    expect((await introspect(added.client_id, added.client_secret)).status).toBe(401);
    await introspect(rotated.client_id, rotated.client_secret).expect(200);
    const removed = await ok<{ removed: ResourceServerView }>('remove', '--audience', 'http://127.0.0.1:9000/billing');
    expect(removed.removed).toMatchObject({ id: added.client_id, audience: 'http://127.0.0.1:9000/billing' });
    expect((await introspect(rotated.client_id, rotated.client_secret)).status).toBe(401);
    expect((await ok<Listed>('list')).resource_servers.map((s) => s.id)).not.toContain(added.client_id);
  });

  it('refuses a taken audience, an unknown one, and an audience that is not https (or http on loopback): exit 2', async () => {
    await ok('add', '--name', 'Once', '--audience', 'https://once.cli.example.com');
    await fails(['add', '--name', 'Twice', '--audience', 'https://once.cli.example.com'], /already registered/);
    await fails(['remove', '--audience', 'https://nowhere.example.com'], /no resource server has the audience/);
    await fails(['rotate-secret', '--audience', 'https://nowhere.example.com'], /no resource server has the audience/);
    for (const audience of [
      'http://api.example.com',
      'orders',
      'https://u:p@api.example.com',
      `https://${'a'.repeat(250)}.com`,
    ]) {
      await fails(['add', '--name', 'Bad', '--audience', audience], /--audience must/);
    }
    await fails(['add', '--audience', 'https://noname.example.com'], /--name/);
  });

  it('has --help for the group and each command', async () => {
    const group = await runTestCli(['resource-server', '--help'], env);
    expect(group.exitCode).toBe(0);
    expect(group.stdout).toMatch(/add.*\n[\s\S]*list[\s\S]*remove[\s\S]*rotate-secret/);
    const add = await cli('add', '--help');
    expect(add.exitCode).toBe(0);
    expect(add.stdout).toContain('--audience <uri>');
  });
});
