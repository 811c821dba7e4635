import { DataSource } from 'typeorm';
import type { CliResult } from '../../src/cli';
import { runTestCli, startTestCli, TestCli } from '../support/cli';
import type { Environment } from '../../src/config/configuration';
import { ResourceServer } from '../../src/resource-servers/resource-server.entity';
import type {
  ResourceServerCredentialsView,
  ResourceServerView,
} from '../../src/resource-servers/resource-server.command';
import { ResourceServersService } from '../../src/resource-servers/resource-servers.service';
import { ResourceServerScopes1765852000000 } from '../../src/database/migrations/1765852000000-resource-server-scopes';
import { cliChecks } from '../support/cli';
import { UUID } from '../support/http-assertions';
import { createTestApp, createTestDatabase, TestApp, TestDatabase, testEnvironment } from '../support/test-app';
import { SET_UP_TIMEOUT_MS } from '../support/timeouts';

/** `gatehouse resource-server ...` (docs/resource-servers.md#registering-a-resource-server), on the test database. */
describe('admin CLI: resource-server', () => {
  let database: TestDatabase;
  let env: Environment;
  let t: TestApp;
  let commands: TestCli;

  beforeAll(async () => {
    database = createTestDatabase();
    env = testEnvironment(database);
    t = await createTestApp({ database });
    await t.user({ org: 'cli-resource-servers' });
    commands = await startTestCli(env);
  }, SET_UP_TIMEOUT_MS);
  afterAll(async () => {
    await commands?.close();
    await t.close();
    await database.drop();
  });

  const cli = (...argv: string[]): Promise<CliResult> => commands.run('resource-server', ...argv);
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
        scopes: [],
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

  it('add --scope declares scopes (repeatable), list shows them, set-scopes replaces them; tokens follow at once', async () => {
    const audience = 'https://notes.cli.example.com';
    const added = await ok<Credentials>(
      'add',
      '--name',
      'Notes',
      '--audience',
      audience,
      '--scope',
      'tools:read=List and call read-only tools',
      '--scope',
      'tools:write= Call tools that change notes ',
    );
    const declared = [
      { name: 'tools:read', description: 'List and call read-only tools' },
      { name: 'tools:write', description: 'Call tools that change notes' },
    ];
    expect(added.resource_server.scopes).toEqual(declared);
    expect((await ok<Listed>('list')).resource_servers).toContainEqual(added.resource_server);
    expect(await t.get(ResourceServersService).declaredScopes(audience)).toEqual(declared);
    expect(await t.get(ResourceServersService).declaredScopes('https://nowhere.example.com')).toBeNull();

    const member = await t.user({ org: 'cli-resource-servers' });
    const key = await t.createKey(member, 'notes');
    const mint = (scope?: string) =>
      t
        .http()
        .post('/v1/token')
        .set('Authorization', `ApiKey ${key.value}`)
        .send(scope === undefined ? { resource: audience } : { resource: audience, scope });
    expect((await mint('tools:write').expect(200)).body.scope).toBe('tools:write');

    const changed = await ok<{ resource_server: ResourceServerView }>(
      'set-scopes',
      '--audience',
      audience,
      '--scope',
      'notes:read=Read notes',
    );
    expect(changed.resource_server).toMatchObject({
      id: added.client_id,
      scopes: [{ name: 'notes:read', description: 'Read notes' }],
    });
    expect((await mint('tools:write')).status).toBe(400);
    expect((await mint().expect(200)).body.scope).toBe('notes:read');

    // None: the server declares nothing, and its tokens carry Gatehouse's permissions again.
    const cleared = await ok<{ resource_server: ResourceServerView }>('set-scopes', '--audience', audience);
    expect(cleared.resource_server.scopes).toEqual([]);
    expect((await mint().expect(200)).body.scope).toBe('api_keys:read audit:read integrations:read integrations:write');
    await fails(['set-scopes', '--audience', 'https://nowhere.example.com'], /no resource server has the audience/);
  });

  it('refuses a malformed scope, a Gatehouse permission, a long or multi-line description, a duplicate: exit 2, nothing written', async () => {
    const audience = 'https://bad-scopes.cli.example.com';
    const add = (...scopes: string[]) => [
      'add',
      '--name',
      'Bad scopes',
      '--audience',
      audience,
      ...scopes.flatMap((scope) => ['--scope', scope]),
    ];
    await fails(add('tools:read'), /--scope must be NAME=DESCRIPTION/);
    await fails(add('=No name'), /--scope name must be 1 to 64/);
    await fails(add('tools read=Spaces'), /--scope name must be/);
    await fails(add('tools"read=Quote'), /--scope name must be/);
    await fails(add(`${'a'.repeat(65)}=Long`), /--scope name must be 1 to 64/);
    await fails(add('api_keys:read=Mine'), /one of Gatehouse's own permissions/);
    await fails(add('tools:read='), /description must be 1 to 200 characters/);
    await fails(add(`tools:read=${'d'.repeat(201)}`), /description must be 1 to 200 characters/);
    await fails(add('tools:read=Two\nlines'), /description must be 1 to 200 characters on one line/);
    await fails(add('tools:read=One', 'tools:read=Two'), /tools:read is given twice/);
    await fails(add(...Array.from({ length: 33 }, (_, i) => `s${i}=Scope ${i}`)), /at most 32 scopes/);
    expect((await ok<Listed>('list')).resource_servers.map((s) => s.audience)).not.toContain(audience);
  });

  it('the scopes migration goes down and up again on this database, keeping the servers (declaring none)', async () => {
    const audience = 'https://migrated.cli.example.com';
    const added = await ok<Credentials>('add', '--name', 'Migrated', '--audience', audience, '--scope', 'x:y=Z');
    const runner = t.get(DataSource).createQueryRunner();
    try {
      const migration = new ResourceServerScopes1765852000000();
      await migration.down(runner);
      await migration.up(runner);
    } finally {
      await runner.release();
    }
    const listed = (await ok<Listed>('list')).resource_servers.find((server) => server.id === added.client_id);
    expect(listed).toMatchObject({ audience, scopes: [] });
  });

  it('has --help for the group and each command', async () => {
    const group = await runTestCli(['resource-server', '--help'], env);
    expect(group.exitCode).toBe(0);
    expect(group.stdout).toMatch(/add.*\n[\s\S]*list[\s\S]*remove[\s\S]*rotate-secret/);
    const add = await cli('add', '--help');
    expect(add.exitCode).toBe(0);
    expect(add.stdout).toContain('--audience <uri>');
    expect(add.stdout).toContain('--scope <name=description>');
    expect((await cli('set-scopes', '--help')).stdout).toContain('--scope <name=description>');
  });
});
