import { randomUUID } from 'node:crypto';
import { createServer as createHttpServer } from 'node:http';
import { createServer as createTcpServer, Socket } from 'node:net';
import { DataSource } from 'typeorm';
import { AuditService } from '../../src/audit/audit.service';
import type { CliResult } from '../../src/cli';
import { runTestCli, startTestCli, TestCli } from '../support/cli';
import { type Environment, loadConfiguration } from '../../src/config/configuration';
import type { TrustedIssuerView } from '../../src/federation/trusted-issuer.command';
import { TrustedIssuersService } from '../../src/federation/trusted-issuers.service';
import { TrustedIssuers1765310000000 } from '../../src/database/migrations/1765310000000-trusted-issuers';
import { ConsoleSingleSignOn1765530000000 } from '../../src/database/migrations/1765530000000-console-single-sign-on';
import { OnePeopleIssuerPerOrganization1765710000000 } from '../../src/database/migrations/1765710000000-one-people-issuer-per-organization';
import { TrustedIssuerAllowedOrigins1765851000000 } from '../../src/database/migrations/1765851000000-trusted-issuer-allowed-origins';
import { UnitOfWork } from '../../src/database/unit-of-work';
import { TrustedIssuer } from '../../src/federation/trusted-issuer.entity';
import { TrustedIssuersRepository } from '../../src/federation/trusted-issuers.repository';
import { cliChecks } from '../support/cli';
import { ISO_MS, UUID } from '../support/http-assertions';
import { IdentityProvider } from '../support/identity-provider';
import { freePort, listenOnLoopback } from '../support/ports';
import {
  createTestApp,
  createTestDatabase,
  TEST_ISSUER,
  TestApp,
  TestDatabase,
  testEnvironment,
} from '../support/test-app';
import { SET_UP_TIMEOUT_MS } from '../support/timeouts';

/** `gatehouse trusted-issuer ...` (docs/federation.md#the-admin-cli) against a live identity provider. */
describe('admin CLI: trusted-issuer', () => {
  let database: TestDatabase;
  let env: Environment;
  let t: TestApp;
  let idp: IdentityProvider;
  let acme: string;
  let globex: string;
  let initech: string;
  let commands: TestCli;

  beforeAll(async () => {
    database = createTestDatabase();
    env = testEnvironment(database);
    [t, idp] = await Promise.all([createTestApp({ database }), IdentityProvider.start()]);
    acme = (await t.user({ org: 'fed-acme' })).organizationId;
    globex = (await t.user({ org: 'fed-globex' })).organizationId;
    initech = (await t.user({ org: 'fed-initech' })).organizationId;
    commands = await startTestCli(env);
  }, SET_UP_TIMEOUT_MS);
  afterAll(async () => {
    await commands?.close();
    await IdentityProvider.stopAll();
    await t.close();
    await database.drop();
  });

  const cli = (...argv: string[]): Promise<CliResult> => commands.run('trusted-issuer', ...argv);
  const { ok, fails } = cliChecks(cli);
  type Added = { trusted_issuer: TrustedIssuerView };
  type Listed = { trusted_issuers: TrustedIssuerView[] };
  const listed = async (org: string) => (await ok<Listed>('list', '--org', org)).trusted_issuers;
  const rowCount = async () =>
    Number((await t.get(DataSource).query('SELECT count(*) AS n FROM trusted_issuers'))[0].n as string);
  const auditOf = async (organizationId: string) =>
    (await t.get(AuditService).list(organizationId))
      .filter((event) => event.action.startsWith('trusted_issuer.'))
      .map(({ action, targetType, targetId, reason, actorUserId }) => ({
        action,
        targetType,
        targetId,
        reason,
        actorUserId,
      }));
  const workloads = (org: string, ...more: string[]) =>
    ['add', '--org', org, '--issuer', idp.issuer, '--kind', 'workloads', ...more] as const;
  const peopleAt = (provider: IdentityProvider, org: string, ...more: string[]) =>
    [
      'add',
      '--org',
      org,
      '--issuer',
      provider.issuer,
      '--kind',
      'people',
      '--client-id',
      provider.people.clientId,
      '--client-secret',
      provider.people.clientSecret,
      ...more,
    ] as const;
  const people = (org: string, ...more: string[]) => peopleAt(idp, org, ...more);

  it("add --kind workloads prints exactly the entry (audience: Gatehouse's issuer URL and the organization), audited; list shows it", async () => {
    const added = await ok<Added>(...workloads('fed-acme'));
    expect(added).toStrictEqual({
      trusted_issuer: {
        id: expect.stringMatching(UUID),
        organization_id: acme,
        issuer: idp.issuer,
        kind: 'workloads',
        audience: `${TEST_ISSUER}/organizations/${acme}`,
        client_id: null,
        email_domains: [],
        jit_role: null,
        allowed_origins: [],
        created_at: expect.stringMatching(ISO_MS),
      },
    });
    expect(Object.keys(added.trusted_issuer)).toEqual([
      'id',
      'organization_id',
      'issuer',
      'kind',
      'audience',
      'client_id',
      'email_domains',
      'jit_role',
      'allowed_origins',
      'created_at',
    ]);
    expect(await listed('fed-acme')).toStrictEqual([added.trusted_issuer]);
    expect(await auditOf(acme)).toStrictEqual([
      {
        action: 'trusted_issuer.added',
        targetType: 'trusted_issuer',
        targetId: added.trusted_issuer.id,
        reason: 'workloads',
        actorUserId: null,
      },
    ]);
    // Another organization may trust the same workload issuer, by default with an audience of its own (a given one:
    // `remove` below).
    const other = await ok<Added>(...workloads('fed-globex'));
    expect(other.trusted_issuer).toMatchObject({
      organization_id: globex,
      kind: 'workloads',
      audience: `${TEST_ISSUER}/organizations/${globex}`,
    });
    await fails(
      [...workloads('fed-acme')],
      new RegExp(`^error: fed-acme already trusts ${idp.issuer} for workloads\\n$`),
    );
  }, 30_000);

  it('add --kind people: the audience is the client id, domains in lower case once, the secret stored encrypted only', async () => {
    const before = await rowCount();
    const result = await cli(
      ...people(
        'fed-acme',
        '--token-endpoint-auth',
        'client_secret_post',
        '--email-domain',
        'Example.COM',
        '--email-domain',
        'people.example',
        '--email-domain',
        'example.com',
        '--jit-role',
        'member',
      ),
    );
    expect(result).toMatchObject({ exitCode: 0, stderr: '' });
    expect(result.stdout).not.toContain(idp.people.clientSecret);
    const printed = JSON.parse(result.stdout) as Added & { redirect_uri: string };
    expect(Object.keys(printed)).toEqual(['trusted_issuer', 'redirect_uri']);
    // The redirect URI to register at the provider: the shared one, as its document announces RFC 9207's `iss`.
    expect(printed.redirect_uri).toBe(`${loadConfiguration(env).console.publicBaseUrl}/v1/console/sso/callback`);
    const added = printed.trusted_issuer;
    expect(added).toStrictEqual({
      id: expect.stringMatching(UUID),
      organization_id: acme,
      issuer: idp.issuer,
      kind: 'people',
      audience: idp.people.clientId,
      client_id: idp.people.clientId,
      email_domains: ['example.com', 'people.example'],
      jit_role: 'member',
      allowed_origins: [],
      created_at: expect.stringMatching(ISO_MS),
    });
    expect(await rowCount()).toBe(before + 1);

    const [row] = await t
      .get(DataSource)
      .query(`SELECT client_secret_encrypted, token_endpoint_auth FROM trusted_issuers WHERE id = '${added.id}'`);
    expect(row.token_endpoint_auth).toBe('client_secret_post');
    expect(row.client_secret_encrypted).toMatch(/^v1:[^:]+:[A-Za-z0-9_-]+:[A-Za-z0-9_-]+:[A-Za-z0-9_-]+$/);
    expect(row.client_secret_encrypted).not.toContain(idp.people.clientSecret);
    const service = t.get(TrustedIssuersService);
    const [stored] = (await service.list('fed-acme')).filter((entry) => entry.id === added.id);
    expect(service.clientSecretOf(stored)).toBe(idp.people.clientSecret);
    expect(JSON.stringify(await listed('fed-acme'))).not.toContain(idp.people.clientSecret);

    // A people issuer serves one organization; the default client authentication is client_secret_basic.
    await fails(
      [...people('fed-globex')],
      /already signs in the people of another organization \(a people issuer serves one organization\)/,
    );
    expect(await rowCount()).toBe(before + 1);
  });

  it("add --kind people prints the organization's own redirect URI for a provider without `iss` (its name URL-encoded)", async () => {
    await t.user({ org: 'Fed Plain Co' });
    const server = createHttpServer((req, res) => {
      if (req.url !== '/.well-known/openid-configuration') return void res.writeHead(404).end();
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          issuer,
          authorization_endpoint: `${issuer}/authorize`,
          token_endpoint: `${issuer}/token`,
          jwks_uri: `${issuer}/keys`,
        }),
      );
    });
    const issuer = `http://127.0.0.1:${await listenOnLoopback(server)}`;
    try {
      const added = await ok<Added & { redirect_uri: string }>(
        'add',
        '--org',
        'Fed Plain Co',
        '--issuer',
        issuer,
        '--kind',
        'people',
        '--client-id',
        'plain-console',
        '--client-secret',
        'plain-secret',
      );
      expect(added.redirect_uri).toBe(
        `${loadConfiguration(env).console.publicBaseUrl}/v1/console/sso/callback/Fed%20Plain%20Co`,
      );
    } finally {
      server.closeAllConnections();
      server.close();
    }
  });

  it('remove prints the entry it removed, audited; list no longer has it; a second remove is refused', async () => {
    const added = (await ok<Added>(...workloads('fed-initech', '--audience', 'to-remove'))).trusted_issuer;
    expect(added.audience).toBe('to-remove');
    const removed = await ok<{ removed: TrustedIssuerView; revoked_workload_identities: number }>(
      'remove',
      '--id',
      added.id.toUpperCase(),
    );
    // No workload identity named it (test/federation/trusted-issuer-removal.e2e-spec.ts: one that does).
    expect(removed).toStrictEqual({ removed: added, revoked_workload_identities: 0 });
    expect((await listed('fed-initech')).map((entry) => entry.id)).not.toContain(added.id);
    expect((await auditOf(initech)).filter((event) => event.targetId === added.id)).toStrictEqual([
      {
        action: 'trusted_issuer.removed',
        targetType: 'trusted_issuer',
        targetId: added.id,
        reason: 'workloads',
        actorUserId: null,
      },
      {
        action: 'trusted_issuer.added',
        targetType: 'trusted_issuer',
        targetId: added.id,
        reason: 'workloads',
        actorUserId: null,
      },
    ]);
    await fails(['remove', '--id', added.id], new RegExp(`^error: no trusted issuer has the id ${added.id}\\n$`));
    await fails(['remove', '--id', 'not-an-id'], /--id must be a trusted issuer id \(a UUID\)/);
  });

  it('an organization has one people issuer at most: a second is refused naming the first, until it is removed; workloads issuers may be several', async () => {
    const umbrella = (await t.user({ org: 'fed-umbrella' })).organizationId;
    const other = await IdentityProvider.start();
    const first = (await ok<Added>(...peopleAt(other, 'fed-umbrella'))).trusted_issuer;
    const before = await rowCount();
    const auditBefore = await auditOf(umbrella);
    // Refused before any discovery: this issuer is never asked (it does not exist).
    const second = [
      'add',
      '--org',
      'fed-umbrella',
      '--issuer',
      'https://login.umbrella.example',
      '--kind',
      'people',
      '--client-id',
      'umbrella-console',
      '--client-secret',
      'a-secret',
    ];
    const refused = await cli(...second);
    expect(refused).toStrictEqual({
      exitCode: 2,
      stdout: '',
      stderr:
        `error: fed-umbrella already has a people issuer, ${other.issuer} (id ${first.id}); an organization has one ` +
        `at most: remove it first (trusted-issuer remove --id ${first.id})\n`,
    });
    expect(await rowCount()).toBe(before);
    expect(await auditOf(umbrella)).toStrictEqual(auditBefore);

    // Workloads issuers: as many as the organization trusts, beside its people issuer (the same issuer included).
    const workloadEntries = [
      await ok<Added>(...workloads('fed-umbrella')),
      await ok<Added>('add', '--org', 'fed-umbrella', '--issuer', other.issuer, '--kind', 'workloads'),
    ];
    expect((await listed('fed-umbrella')).map(({ issuer, kind }) => [issuer, kind])).toStrictEqual([
      [other.issuer, 'people'],
      [idp.issuer, 'workloads'],
      [other.issuer, 'workloads'],
    ]);
    expect(workloadEntries.map((entry) => entry.trusted_issuer.kind)).toEqual(['workloads', 'workloads']);

    // The database says it too: a second people entry of the organization is a unique violation.
    const stored = (await t.get(TrustedIssuersService).list('fed-umbrella')).find((entry) => entry.kind === 'people')!;
    const twin = Object.assign(new TrustedIssuer(), {
      ...stored,
      id: randomUUID(),
      issuer: 'https://twin.umbrella.example',
    });
    await expect(t.get(UnitOfWork).run((tx) => t.get(TrustedIssuersRepository).insert(twin, tx))).rejects.toThrow(
      /unique|UNIQUE/,
    );
    // An add that passed the checks before another won (its insert refused by that index) says what it met.
    const repository = t.get(TrustedIssuersRepository);
    jest.spyOn(repository, 'peopleIssuerOf').mockResolvedValueOnce(null);
    jest.spyOn(repository, 'peopleOrganizationOf').mockResolvedValueOnce(null);
    await expect(
      t.get(TrustedIssuersService).add({
        organization: 'fed-umbrella',
        issuer: idp.issuer,
        kind: 'people',
        clientId: idp.people.clientId,
        clientSecret: idp.people.clientSecret,
        emailDomains: [],
      }),
    ).rejects.toThrow(`fed-umbrella already has a people issuer, ${other.issuer} (id ${first.id})`);
    jest.restoreAllMocks();

    // Removed first, the organization may trust another people issuer (here the same one with other settings).
    await ok('remove', '--id', first.id);
    const again = (
      await ok<Added>(...peopleAt(other, 'fed-umbrella', '--jit-role', 'viewer', '--email-domain', 'umbrella.test'))
    ).trusted_issuer;
    expect(again).toMatchObject({ organization_id: umbrella, kind: 'people', jit_role: 'viewer' });
    expect((await listed('fed-umbrella')).filter((entry) => entry.kind === 'people')).toStrictEqual([again]);
  }, 30_000);

  it('refuses --jit-role without --email-domain (exit 2, nothing stored); list warns about such an entry made before', async () => {
    await t.user({ org: 'fed-jit' });
    // A provider of its own: a people issuer serves one organization.
    const own = await IdentityProvider.start();
    const before = await rowCount();
    await fails(
      [...peopleAt(own, 'fed-jit', '--jit-role', 'admin')],
      /^error: --jit-role needs --email-domain: just-in-time membership adds only people of the domains the organization owns/,
    );
    expect(await rowCount()).toBe(before);

    const added = (
      await ok<Added>(...peopleAt(own, 'fed-jit', '--jit-role', 'viewer', '--email-domain', 'jit.example'))
    ).trusted_issuer;
    expect(added).toMatchObject({ email_domains: ['jit.example'], jit_role: 'viewer' });
    expect(await ok('list', '--org', 'fed-jit')).toStrictEqual({ trusted_issuers: [added] });
    // As a database from before the rule may hold it: a just-in-time role and no domain, which adds nobody.
    await t.get(DataSource).query(`UPDATE trusted_issuers SET email_domains = '[]' WHERE id = '${added.id}'`);
    expect(await ok('list', '--org', 'fed-jit')).toStrictEqual({
      trusted_issuers: [{ ...added, email_domains: [] }],
      warnings: [
        `trusted issuer ${added.id} (${own.issuer}) has jit_role viewer but no email domain: it adds nobody just in ` +
          'time (people without a membership get "no access"); to add people again, remove it and add it with ' +
          '--email-domain',
      ],
    });
  }, 30_000);

  describe('an issuer that cannot be used: exit 2 naming the URL and the cause, nothing stored', () => {
    let before: number;
    let auditBefore: number;
    beforeEach(async () => {
      before = await rowCount();
      auditBefore = (await auditOf(acme)).length;
    });
    afterEach(async () => {
      expect(await rowCount()).toBe(before);
      expect((await auditOf(acme)).length).toBe(auditBefore);
    });
    const add = (issuer: string) => ['add', '--org', 'fed-acme', '--issuer', issuer, '--kind', 'workloads'];

    it('unreachable: connection refused', async () => {
      const issuer = `http://127.0.0.1:${await freePort()}`;
      await fails(
        add(issuer),
        new RegExp(
          `^error: cannot fetch ${issuer}/\\.well-known/openid-configuration: connect ECONNREFUSED 127\\.0\\.0\\.1:\\d+\\n$`,
        ),
      );
    });

    it('silent: no answer within 3 s (bounded)', async () => {
      const sockets = new Set<Socket>();
      const server = createTcpServer((socket) => sockets.add(socket));
      const issuer = `http://127.0.0.1:${await listenOnLoopback(server)}`;
      try {
        const started = Date.now();
        await fails(
          add(issuer),
          new RegExp(`^error: cannot fetch ${issuer}/\\.well-known/openid-configuration: no answer within 3 s\\n$`),
        );
        expect(Date.now() - started).toBeLessThan(8000);
      } finally {
        for (const socket of sockets) socket.destroy();
        server.close();
      }
    }, 20_000);

    it('the document names another issuer (a trailing slash, another host name): a mismatch', async () => {
      await fails(
        add(`${idp.issuer}/`),
        new RegExp(
          `^error: the discovery document at ${idp.issuer}/\\.well-known/openid-configuration names "${idp.issuer}", not "${idp.issuer}/" \\(they must be equal, character for character\\)\\n$`,
        ),
      );
      const byName = idp.issuer.replace('127.0.0.1', 'localhost');
      await fails(add(byName), new RegExp(`names "${idp.issuer}", not "${byName}"`));
    });

    it('no discovery document: both well-known addresses answered 404', async () => {
      const server = createHttpServer((_req, res) => res.writeHead(404).end());
      const issuer = `http://127.0.0.1:${await listenOnLoopback(server)}/tenant`;
      try {
        await fails(
          add(issuer),
          new RegExp(
            `^error: no discovery document for the issuer ${issuer}: ${issuer}/\\.well-known/openid-configuration answered 404, ` +
              `${issuer.replace('/tenant', '')}/\\.well-known/oauth-authorization-server/tenant answered 404\\n$`,
          ),
        );
      } finally {
        server.closeAllConnections();
        server.close();
      }
    });

    it('a discovery document larger than 64 KiB: its reading stops there', async () => {
      const server = createHttpServer((_req, res) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        // Chunked, without Content-Length: the bound is on what is read.
        for (let i = 0; i < 100; i += 1) res.write(' '.repeat(1024));
        res.end('{}');
      });
      const issuer = `http://127.0.0.1:${await listenOnLoopback(server)}`;
      try {
        await fails(
          add(issuer),
          new RegExp(
            `^error: cannot fetch ${issuer}/\\.well-known/openid-configuration: the answer is larger than 65536 bytes\\n$`,
          ),
        );
      } finally {
        server.closeAllConnections();
        server.close();
      }
    });

    it('not https:// on a host that is not loopback', async () => {
      await fails(add('http://login.example.com'), /^error: the issuer http:\/\/login\.example\.com is not https:\/\//);
    });

    // Sixteen CLI processes, about a second each on a loaded machine.
    it('options that do not fit the kind, or are not valid', async () => {
      await fails([...workloads('fed-acme', '--client-id', 'x')], /^error: --client-id: only for --kind people\n$/);
      await fails(
        [...workloads('fed-acme', '--email-domain', 'example.com', '--jit-role', 'viewer')],
        /^error: --email-domain, --jit-role: only for --kind people\n$/,
      );
      await fails(
        ['add', '--org', 'fed-acme', '--issuer', idp.issuer, '--kind', 'people'],
        /--kind people needs --client-id and --client-secret/,
      );
      await fails(
        ['add', '--org', 'fed-acme', '--issuer', idp.issuer, '--kind', 'people', '--client-id', 'a'],
        /--kind people needs --client-id and --client-secret/,
      );
      await fails([...people('fed-acme', '--audience', 'other')], /--audience of a people issuer is its --client-id/);
      await fails(
        ['add', '--org', 'fed-acme', '--issuer', idp.issuer, '--kind', 'robots'],
        /Allowed choices are people, workloads/,
      );
      await fails(['add', '--org', 'fed-acme', '--issuer', idp.issuer], /--kind/);
      await fails(add('https://login.example.com/?tenant=1'), /--issuer must have no credentials, query, fragment/);
      await fails(add('login.example.com'), /--issuer must be an absolute URL/);
      await fails([...people('fed-acme', '--email-domain', 'not a domain')], /--email-domain must be a domain name/);
      const badSecret = await cli(...people('fed-acme').slice(0, -1), 'two words');
      expect(badSecret).toStrictEqual({
        exitCode: 2,
        stdout: '',
        stderr: 'error: --client-secret must be 1 to 1024 characters, without spaces\n',
      });
      await fails([...people('fed-acme', '--token-endpoint-auth', 'private_key_jwt')], /Allowed choices are/);
      await fails(
        ['add', '--org', 'nowhere', '--issuer', idp.issuer, '--kind', 'workloads'],
        /organization not found: nowhere/,
      );
      await fails(['list', '--org', 'nowhere'], /organization not found: nowhere/);
    }, 30_000);
  });

  it('the migration goes down and up again on this database', async () => {
    const runner = t.get(DataSource).createQueryRunner();
    try {
      // console_sso_requests refers to trusted_issuers: down first, up again last (PostgreSQL enforces it). The index of
      // one people issuer per organization goes first and comes back last.
      const allowedOrigins = new TrustedIssuerAllowedOrigins1765851000000();
      const onePeople = new OnePeopleIssuerPerOrganization1765710000000();
      const dependent = new ConsoleSingleSignOn1765530000000();
      const migration = new TrustedIssuers1765310000000();
      await allowedOrigins.down(runner);
      await onePeople.down(runner);
      await dependent.down(runner);
      await migration.down(runner);
      await migration.up(runner);
      await dependent.up(runner);
      await onePeople.up(runner);
      await allowedOrigins.up(runner);
    } finally {
      await runner.release();
    }
    expect(await rowCount()).toBe(0);
  });

  it('has --help for the group and each command', async () => {
    const group = await runTestCli(['trusted-issuer', '--help'], env);
    expect(group.exitCode).toBe(0);
    expect(group.stdout).toMatch(/add[\s\S]*list[\s\S]*remove/);
    const add = await cli('add', '--help');
    expect(add.exitCode).toBe(0);
    for (const flag of [
      '--issuer <url>',
      '--kind <kind>',
      '--client-secret <secret>',
      '--email-domain <domain>',
      '--jit-role <role>',
      '--allow-origin <origin>',
    ]) {
      expect(add.stdout).toContain(flag);
    }
  });
});
