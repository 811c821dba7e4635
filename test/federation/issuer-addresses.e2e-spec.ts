import dns from 'node:dns';
import { generateKeyPairSync, KeyObject, randomBytes, randomUUID, sign } from 'node:crypto';
import { createServer, Server } from 'node:http';
import { Writable } from 'node:stream';
import { DataSource } from 'typeorm';
import type { CliResult } from '../../src/cli';
import { startTestCli, TestCli } from '../support/cli';
import { DEFAULT_FEDERATION_TIMINGS, FEDERATION_TIMINGS } from '../../src/federation/federation-timings';
import type { TrustedIssuerView } from '../../src/federation/trusted-issuer.command';
import { TrustedIssuersService } from '../../src/federation/trusted-issuers.service';
import { cliChecks } from '../support/cli';
import { b64, bearer } from '../support/http-assertions';
import { listenOnLoopback } from '../support/ports';
import { createTestApp, DATABASE_KIND, TestApp, TestUser } from '../support/test-app';
import { SET_UP_TIMEOUT_MS } from '../support/timeouts';
import { workloadForm } from '../support/token-exchange';

/**
 * An identity provider as far as Gatehouse sees it: a discovery document the test writes (by default everything on the
 * issuer's own origin) and its key set, on a loopback port.
 */
class FakeIssuer {
  readonly kid = `fake-${randomBytes(4).toString('hex')}`;
  readonly privateKey: KeyObject;
  private readonly jwk: Record<string, unknown>;
  issuer = '';
  document: Record<string, unknown> = {};

  private constructor(private readonly server: Server) {
    const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    this.privateKey = privateKey;
    this.jwk = { ...publicKey.export({ format: 'jwk' }), kid: this.kid, alg: 'RS256', use: 'sig' };
  }

  static async start(): Promise<FakeIssuer> {
    let fake: FakeIssuer | undefined = undefined;
    const server = createServer((request, response) => {
      const answer = (body: unknown) =>
        response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
      if (request.url === '/.well-known/openid-configuration') return answer(fake!.document);
      if (request.url === '/jwks') return answer({ keys: [fake!.jwk] });
      response.writeHead(404).end();
    });
    fake = new FakeIssuer(server);
    fake.issuer = `http://127.0.0.1:${await listenOnLoopback(server)}`;
    fake.reset();
    return fake;
  }

  /** The document of an honest provider: every endpoint on the issuer's origin. */
  reset(): void {
    this.document = {
      issuer: this.issuer,
      jwks_uri: `${this.issuer}/jwks`,
      authorization_endpoint: `${this.issuer}/authorize`,
      token_endpoint: `${this.issuer}/token`,
      token_endpoint_auth_methods_supported: ['client_secret_basic'],
      id_token_signing_alg_values_supported: ['RS256'],
    };
  }

  token(claims: Record<string, unknown>): string {
    const now = Math.floor(Date.now() / 1000);
    const input = `${b64({ alg: 'RS256', kid: this.kid })}.${b64({ iss: this.issuer, iat: now, exp: now + 300, ...claims })}`;
    return `${input}.${sign('sha256', Buffer.from(input), this.privateKey).toString('base64url')}`;
  }

  close(): void {
    this.server.closeAllConnections();
    this.server.close();
  }
}

/** What a document could point Gatehouse at (its own metrics port, a cloud's metadata service): counts connections. */
class Target {
  connections = 0;
  url = '';
  private readonly server = createServer((_request, response) => response.writeHead(404).end());

  static async start(): Promise<Target> {
    const target = new Target();
    target.server.on('connection', () => (target.connections += 1));
    target.url = `http://127.0.0.1:${await listenOnLoopback(target.server)}`;
    return target;
  }

  close(): void {
    this.server.closeAllConnections();
    this.server.close();
  }
}

/** JSON log lines written to a sink. */
function logSink(): { stream: Writable; lines: () => Array<Record<string, unknown>> } {
  let logged = '';
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      logged += chunk.toString('utf8');
      done();
    },
  });
  const lines = () =>
    logged
      .split('\n')
      .filter((line) => line !== '')
      .map((line) => JSON.parse(line) as Record<string, unknown>);
  return { stream, lines };
}

/**
 * A trusted issuer's discovery document cannot send Gatehouse anywhere (docs/federation.md#discovery): the address
 * rules of webhooks for every URL it fetches, resolved names included, and the key set and endpoints on the issuer's
 * origin or one the operator allowed, at `trusted-issuer add` and whenever the document is read again.
 */
describe(`trusted issuers' addresses (${DATABASE_KIND})`, () => {
  type Added = { trusted_issuer: TrustedIssuerView };
  let t: TestApp;
  let target: Target;
  const fakes: FakeIssuer[] = [];
  const log = logSink();
  let commands: TestCli;

  beforeAll(async () => {
    target = await Target.start();
    t = await createTestApp({
      env: { LOG_LEVEL: 'info' },
      logStream: log.stream,
      // Every verification reads the document again: a document changed by the provider is seen at once.
      override: (builder) =>
        builder.overrideProvider(FEDERATION_TIMINGS).useValue({ ...DEFAULT_FEDERATION_TIMINGS, metadataMaxAgeMs: 0 }),
    });
    await t.user({ org: 'origins-acme' });
    commands = await startTestCli(t.env);
  }, SET_UP_TIMEOUT_MS);
  afterAll(async () => {
    await commands?.close();
    for (const fake of fakes) fake.close();
    target.close();
    await t.close();
  });
  afterEach(() => jest.restoreAllMocks());

  const fake = async (): Promise<FakeIssuer> => {
    const started = await FakeIssuer.start();
    fakes.push(started);
    return started;
  };
  const cli = (...argv: string[]): Promise<CliResult> => commands.run('trusted-issuer', ...argv);
  const { ok, fails } = cliChecks(cli);
  const rowCount = async () =>
    Number((await t.get(DataSource).query('SELECT count(*) AS n FROM trusted_issuers'))[0].n as string);
  const add = (issuer: string, ...more: string[]) =>
    ['add', '--org', 'origins-acme', '--issuer', issuer, '--kind', 'workloads', ...more] as const;
  const addPeople = (org: string, issuer: string, ...more: string[]) => [
    'add',
    '--org',
    org,
    '--issuer',
    issuer,
    '--kind',
    'people',
    '--client-id',
    'gh',
    '--client-secret',
    's3cret',
    ...more,
  ];
  const escaped = (text: string) => text.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');

  describe('trusted-issuer add', () => {
    it("refuses a key set on another origin than the issuer's (a port of this machine) without fetching it; --allow-origin accepts it", async () => {
      const provider = await fake();
      provider.document.jwks_uri = `${target.url}/metrics`;
      const before = await rowCount();
      const result = await cli(...add(provider.issuer));
      expect(result).toEqual({
        exitCode: 2,
        stdout: '',
        stderr:
          `error: the jwks_uri ${target.url}/metrics of ${provider.issuer}/.well-known/openid-configuration is on ` +
          `${target.url}, not the issuer's origin ${provider.issuer}; if the issuer does serve it there, trust the ` +
          `issuer with --allow-origin ${target.url}\n`,
      });
      expect(await rowCount()).toBe(before);

      // The operator who knows the provider keeps its keys there says so; the origin is stored and shown.
      const added = await ok<Added>(...add(provider.issuer, '--allow-origin', `${target.url}/`));
      expect(added.trusted_issuer.allowed_origins).toEqual([target.url]);
      const [row] = await t
        .get(DataSource)
        .query(`SELECT allowed_origins FROM trusted_issuers WHERE id = '${added.trusted_issuer.id}'`);
      expect(JSON.parse(row.allowed_origins as string)).toEqual([target.url]);
      expect(target.connections).toBe(0);
    });

    it('refuses a people issuer whose token or authorization endpoint is on another origin, unless allowed', async () => {
      await t.user({ org: 'origins-people' });
      const provider = await fake();
      for (const name of ['token_endpoint', 'authorization_endpoint']) {
        provider.reset();
        provider.document[name] = `${target.url}/${name}`;
        await fails(
          addPeople('origins-people', provider.issuer),
          new RegExp(
            `^error: the ${name} ${escaped(`${target.url}/${name}`)} of ${escaped(provider.issuer)}/\\.well-known/openid-configuration is on ${escaped(target.url)}, not the issuer's origin`,
          ),
        );
      }
      const added = await ok<Added>(...addPeople('origins-people', provider.issuer, '--allow-origin', target.url));
      expect(added.trusted_issuer.allowed_origins).toEqual([target.url]);
      expect(target.connections).toBe(0);
    });

    it('refuses an issuer or an allowed origin at a private, link-local or reserved address, before any request', async () => {
      const before = await rowCount();
      for (const issuer of ['https://169.254.169.254', 'https://10.1.2.3', 'https://[fd00::1]']) {
        await fails(
          [...add(issuer)],
          new RegExp(
            `^error: the issuer ${escaped(issuer)} points to a private, link-local, multicast or reserved address, which Gatehouse does not call \\(a private one only in IDENTITY_PROVIDER_NETWORKS\\)\\n$`,
          ),
        );
      }
      const provider = await fake();
      await fails(
        [...add(provider.issuer, '--allow-origin', 'https://192.168.1.10')],
        /^error: --allow-origin https:\/\/192\.168\.1\.10 points to a private, link-local, multicast or reserved address/,
      );
      for (const origin of ['https://keys.example.com/path', 'https://keys.example.com?x=1', 'keys.example.com']) {
        await fails([...add(provider.issuer, '--allow-origin', origin)], /must be an origin/);
      }
      await fails(
        [...add(provider.issuer, '--allow-origin', 'http://keys.example.com')],
        /^error: --allow-origin http:\/\/keys\.example\.com is not https:\/\//,
      );
      expect(await rowCount()).toBe(before);
    });

    it('refuses a host name that resolves to a private address: the address is checked, not the name', async () => {
      const resolve = dns.lookup;
      jest.spyOn(dns, 'lookup').mockImplementation(((host: string, options: unknown, callback: unknown) => {
        if (host !== 'idp.internal.test') return (resolve as (...args: unknown[]) => void)(host, options, callback);
        (callback as (error: null, addresses: dns.LookupAddress[]) => void)(null, [
          { address: '10.20.30.40', family: 4 },
        ]);
      }) as unknown as typeof dns.lookup);
      await fails(
        [...add('https://idp.internal.test')],
        new RegExp(
          '^error: cannot fetch https://idp\\.internal\\.test/\\.well-known/openid-configuration: the address it ' +
            'resolves to is private, loopback, link-local, multicast or reserved, which Gatehouse does not call\\n$',
        ),
      );
    });
  });

  describe('trusted-issuer set-origins', () => {
    it('allows an origin on an entry without removing it, checked as add checks it, stored and audited; none again', async () => {
      const provider = await fake();
      const added = await ok<Added>(...add(provider.issuer));
      const id = added.trusted_issuer.id;
      const stored = async () =>
        JSON.parse(
          (await t.get(DataSource).query(`SELECT allowed_origins FROM trusted_issuers WHERE id = '${id}'`))[0]
            .allowed_origins as string,
        ) as string[];
      // The provider moves its key set to another origin: without that origin the entry cannot be changed.
      provider.document.jwks_uri = `${target.url}/metrics`;
      await fails(
        ['set-origins', '--id', id],
        new RegExp(
          `^error: the jwks_uri ${escaped(`${target.url}/metrics`)} .* --allow-origin ${escaped(target.url)}\\n$`,
        ),
      );
      await fails(
        ['set-origins', '--id', id, '--allow-origin', 'https://10.1.2.3'],
        /^error: --allow-origin https:\/\/10\.1\.2\.3 points to a private/,
      );
      await fails(
        ['set-origins', '--id', randomUUID(), '--allow-origin', target.url],
        /^error: no trusted issuer has the id /,
      );
      expect(await stored()).toEqual([]);

      const updated = await ok<Added>('set-origins', '--id', id, '--allow-origin', target.url);
      expect(updated.trusted_issuer).toEqual({ ...added.trusted_issuer, allowed_origins: [target.url] });
      expect(await stored()).toEqual([target.url]);
      const audit = await t
        .get(DataSource)
        .query(`SELECT action, reason FROM audit_events WHERE target_id = '${id}' ORDER BY occurred_at, id`);
      expect(audit).toEqual([
        { action: 'trusted_issuer.added', reason: 'workloads' },
        { action: 'trusted_issuer.updated', reason: 'allowed_origins' },
      ]);

      provider.reset();
      expect((await ok<Added>('set-origins', '--id', id)).trusted_issuer.allowed_origins).toEqual([]);
      expect(await stored()).toEqual([]);
      expect(target.connections).toBe(0);
    });
  });

  describe('when the document is read again', () => {
    let admin: TestUser;
    let provider: FakeIssuer;
    let audience: string;
    let identityId: string;
    const exchange = (app: TestApp, token: string) =>
      app
        .http()
        .post('/oauth/token')
        .type('form')
        .send(workloadForm(token, { client_id: identityId }));

    beforeAll(async () => {
      admin = await t.user({ org: 'origins-runtime', role: 'admin' });
      provider = await fake();
      const entry = await t
        .get(TrustedIssuersService)
        .add({ organization: 'origins-runtime', issuer: provider.issuer, kind: 'workloads', emailDomains: [] });
      audience = entry.audience;
      const created = await t
        .http()
        .post('/v1/workload-identities')
        .set(bearer(admin.token))
        .send({ label: 'deploy', trusted_issuer_id: entry.id, subject: 'deploy', scopes: ['api_keys:read'] })
        .expect(201);
      identityId = created.body.workload_identity.id;
    });

    it('keeps the last key set, as when the provider is down, when the document moves it to another origin; never fetches there', async () => {
      await exchange(t, provider.token({ sub: 'deploy', aud: audience })).expect(200);
      provider.document.jwks_uri = `${target.url}/metrics`;
      try {
        await exchange(t, provider.token({ sub: 'deploy', aud: audience })).expect(200);
        // A token of a key the provider has not published: its key set is fetched again, at the address it had.
        const unknownKid = provider
          .token({ sub: 'deploy', aud: audience })
          .replace(/^[^.]+/, b64({ alg: 'RS256', kid: 'moved' }));
        expect((await exchange(t, unknownKid)).body.error).toBe('invalid_grant');
        expect(target.connections).toBe(0);
        expect(log.lines()).toContainEqual(
          expect.objectContaining({
            level: 'warn',
            issuer: provider.issuer,
            error: expect.stringContaining(`is on ${target.url}, not the issuer's origin ${provider.issuer}`),
            msg: 'issuer metadata refresh failed; keeping the last one',
          }),
        );

        // An instance that has no key set yet answers 503, as when the provider cannot be reached, and says why.
        const other = logSink();
        const second = await createTestApp({
          database: t.database,
          env: { LOG_LEVEL: 'info' },
          logStream: other.stream,
        });
        try {
          const answer = await exchange(second, provider.token({ sub: 'deploy', aud: audience }));
          expect([answer.status, answer.body.error]).toEqual([503, 'temporarily_unavailable']);
          expect(other.lines()).toContainEqual(
            expect.objectContaining({
              level: 'warn',
              issuer: provider.issuer,
              detail: expect.stringContaining(`is on ${target.url}, not the issuer's origin`),
              msg: 'identity provider unavailable',
            }),
          );
        } finally {
          await second.close();
        }
        expect(target.connections).toBe(0);
      } finally {
        provider.reset();
      }
    });

    it('refuses to start a single sign-on whose token or authorization endpoint moved to another origin: 503, nothing fetched there', async () => {
      await t.user({ org: 'origins-sso' });
      const people = await fake();
      await t.get(TrustedIssuersService).add({
        organization: 'origins-sso',
        issuer: people.issuer,
        kind: 'people',
        clientId: 'gatehouse',
        clientSecret: 'secret',
        emailDomains: [],
      });
      for (const name of ['token_endpoint', 'authorization_endpoint']) {
        people.reset();
        people.document[name] = `${target.url}/${name}`;
        const response = await t.http().get('/v1/console/sso').query({ org: 'origins-sso' });
        expect({ status: response.status, body: response.body, location: response.headers.location }).toEqual({
          status: 503,
          body: {
            code: 'UNAVAILABLE',
            message: expect.stringContaining(`is on ${target.url}, not the issuer's origin ${people.issuer}`),
            reason: 'identity_provider_unavailable',
          },
          location: undefined,
        });
      }
      expect(target.connections).toBe(0);
      expect(log.lines()).toContainEqual(expect.objectContaining({ level: 'warn', msg: 'dependency unavailable' }));
    });
  });
});

/** In production no issuer on loopback: the server's own ports are out of reach of a document or an operator's typo. */
describe(`trusted issuers' addresses in production (${DATABASE_KIND})`, () => {
  let t: TestApp;
  let target: Target;

  beforeAll(async () => {
    target = await Target.start();
    t = await createTestApp({ env: { NODE_ENV: 'production' } });
    await t.user({ org: 'origins-production' });
  });
  afterAll(async () => {
    target.close();
    await t.close();
  });

  it('refuses an issuer on a loopback address or localhost without connecting to it; http:// on no host', async () => {
    const port = new URL(target.url).port;
    const add = (issuer: string) =>
      t
        .get(TrustedIssuersService)
        .add({ organization: 'origins-production', issuer, kind: 'workloads', emailDomains: [] });
    for (const issuer of [
      `https://127.0.0.1:${port}`,
      `https://localhost:${port}`,
      `https://[::ffff:127.0.0.1]:${port}`,
    ]) {
      await expect(add(issuer)).rejects.toThrow(
        `the issuer ${issuer} points to a private, loopback, link-local, multicast or reserved address, which Gatehouse does not call in production`,
      );
    }
    await expect(add(`http://127.0.0.1:${port}`)).rejects.toThrow(
      `the issuer http://127.0.0.1:${port} is http://, which production accepts on no host (https:// only)`,
    );
    expect(target.connections).toBe(0);
  });
});
