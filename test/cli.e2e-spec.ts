import { randomBytes } from 'node:crypto';
import { DataSource } from 'typeorm';
import { CliResult, runCli } from '../src/cli';
import type { Environment } from '../src/config/configuration';
import { apiKeyAuth, bearer, decodeJwt, expectBearerRejected, UUID } from './support/http-assertions';
import { createTestApp, createTestDatabase, TestApp, TestDatabase, testEnvironment } from './support/test-app';

/** The admin command line (docs/operations.md#admin-cli), run in-process against the test database. */
describe('admin CLI', () => {
  let database: TestDatabase;
  let env: Environment;
  let t: TestApp;

  beforeAll(async () => {
    database = createTestDatabase();
    env = testEnvironment(database);
    // The app shares the CLI's database (and migrates it first).
    t = await createTestApp({ database });
  });
  afterAll(async () => {
    await t.close();
    await database.drop();
  });

  const cli = (...argv: string[]): Promise<CliResult> => runCli(argv, env);
  const unique = (prefix: string) => `${prefix}-${randomBytes(4).toString('hex')}`;
  const email = () => `${unique('admin')}@example.com`;

  /** Exit 0 and exactly one JSON object on one line of stdout, nothing on stderr. */
  const ok = async (...argv: string[]): Promise<Record<string, unknown>> => {
    const result = await cli(...argv);
    expect({ exitCode: result.exitCode, stderr: result.stderr }).toEqual({ exitCode: 0, stderr: '' });
    expect(result.stdout).toMatch(/^\{.*\}\n$/);
    return JSON.parse(result.stdout);
  };

  /** Exit 2, a message on stderr, nothing on stdout. */
  const fails = async (argv: string[], stderr: RegExp): Promise<void> => {
    const result = await cli(...argv);
    expect(result.exitCode).toBe(2);
    expect(result.stdout).toBe('');
    expect(result.stderr).toMatch(/^error: /);
    expect(result.stderr).toMatch(stderr);
  };

  describe('bootstrap', () => {
    it('prints exactly organization_id, user_id, role, session_token and expires_in', async () => {
      const out = await ok('bootstrap', '--org', unique('org'), '--email', email());
      expect(out).toStrictEqual({
        organization_id: expect.stringMatching(UUID),
        user_id: expect.stringMatching(UUID),
        role: 'admin',
        session_token: expect.any(String),
        expires_in: 3600,
      });
      const { payload } = decodeJwt(out.session_token as string);
      expect(payload).toMatchObject({ sub: out.user_id, org: out.organization_id, token_use: 'session' });
      expect(payload.akid).toBeUndefined();
      expect((payload.exp as number) - (payload.iat as number)).toBe(3600);
    });

    it('is idempotent: a second run gives the same ids and keeps the role', async () => {
      const org = unique('org');
      const address = email();
      const first = await ok('bootstrap', '--org', org, '--email', address, '--role', 'member');
      const second = await ok('bootstrap', '--org', org, '--email', address.toUpperCase());
      expect(second).toMatchObject({ organization_id: first.organization_id, user_id: first.user_id, role: 'member' });
      expect(second.session_token).not.toBe(first.session_token);
    });

    it('sets the role when --role is given on an existing membership', async () => {
      const org = unique('org');
      const address = email();
      await ok('bootstrap', '--org', org, '--email', address);
      const out = await ok('bootstrap', '--org', org, '--email', address, '--role', 'viewer');
      expect(out.role).toBe('viewer');
    });

    it('prints a session token that works against the app on the same database', async () => {
      const out = await ok('bootstrap', '--org', unique('org'), '--email', email());
      const token = out.session_token as string;
      const created = await t
        .http()
        .post('/v1/user-api-keys')
        .set(bearer(token))
        .send({ label: 'from cli' })
        .expect(201);
      expect(created.body.api_key).toMatchObject({ user_id: out.user_id, organization_id: out.organization_id });
      const exchanged = await t.http().post('/v1/token').set(apiKeyAuth(created.body.opaque_key)).expect(200);
      expect(exchanged.body.expires_in).toBe(1800);
    });

    it('writes nothing when an option is refused', async () => {
      const org = unique('org');
      await fails(['bootstrap', '--org', org, '--email', 'not-an-email'], /--email must be an email address/);
      await fails(['bootstrap', '--org', org, '--email', email(), '--role', 'owner'], /--role must be/);
      await fails(['set-token-lifetime', '--org', org, '--seconds', '60'], /organization not found/);
    });

    it.each([
      [['bootstrap', '--email', 'a@example.com'], /--org is required/],
      [['bootstrap', '--org', 'x'], /--email is required/],
      [['bootstrap', '--org', 'x', '--email', 'not-an-email'], /--email must be an email address/],
      [['bootstrap', '--org', 'x', '--email', 'a@example.com', '--role', 'owner'], /--role must be/],
      [['bootstrap', '--org', 'x', '--email'], /argument missing|--email/],
    ])('refuses %j with exit 2', async (argv, message) => {
      await fails(argv, message);
    });
  });

  describe('session', () => {
    it('mints a session token with --ttl', async () => {
      const org = unique('org');
      const address = email();
      const boot = await ok('bootstrap', '--org', org, '--email', address);
      const out = await ok('session', '--email', address, '--ttl', '120');
      expect(out).toStrictEqual({ session_token: expect.any(String), expires_in: 120 });
      const { payload } = decodeJwt(out.session_token as string);
      expect(payload).toMatchObject({ sub: boot.user_id, org: boot.organization_id, token_use: 'session' });
      expect((payload.exp as number) - (payload.iat as number)).toBe(120);
      await t
        .http()
        .get('/v1/user-api-keys')
        .set(bearer(out.session_token as string))
        .expect(200);
    });

    it('defaults to 3600 seconds', async () => {
      const address = email();
      await ok('bootstrap', '--org', unique('org'), '--email', address);
      expect((await ok('session', '--email', address)).expires_in).toBe(3600);
    });

    it('needs --org for a user of several organizations, and honours it', async () => {
      const address = email();
      await ok('bootstrap', '--org', unique('org'), '--email', address);
      const orgB = unique('org');
      const b = await ok('bootstrap', '--org', orgB, '--email', address);
      await fails(['session', '--email', address], /several organizations/);
      const out = await ok('session', '--email', address, '--org', orgB);
      expect(decodeJwt(out.session_token as string).payload.org).toBe(b.organization_id);
    });

    it.each([['0'], ['86401'], ['abc'], ['1.5'], ['-5'], ['']])('refuses --ttl=%s with exit 2', async (ttl) => {
      const address = email();
      await ok('bootstrap', '--org', unique('org'), '--email', address);
      await fails(['session', '--email', address, `--ttl=${ttl}`], /--ttl must be an integer from 1 to 86400/);
    });

    it('refuses an unknown user with exit 2', async () => {
      await fails(['session', '--email', email()], /user not found/);
    });
  });

  describe('set-role', () => {
    it('changes the role, which the app applies at once', async () => {
      const org = unique('org');
      const address = email();
      const boot = await ok('bootstrap', '--org', org, '--email', address);
      const token = boot.session_token as string;
      await t.http().post('/v1/user-api-keys').set(bearer(token)).send({}).expect(201);

      const out = await ok('set-role', '--org', org, '--email', address, '--role', 'viewer');
      expect(out).toStrictEqual({ organization_id: boot.organization_id, user_id: boot.user_id, role: 'viewer' });
      await t.http().post('/v1/user-api-keys').set(bearer(token)).send({}).expect(403);
      await t.http().get('/v1/user-api-keys').set(bearer(token)).expect(200);
    });

    it.each([
      [['set-role', '--org', 'x', '--email', 'a@example.com'], /--role is required/],
      [
        ['set-role', '--org', 'no-such-org-cli', '--email', 'a@example.com', '--role', 'viewer'],
        /organization not found/,
      ],
    ])('refuses %j with exit 2', async (argv, message) => {
      await fails(argv, message);
    });
  });

  describe('remove-member', () => {
    it('removes the membership: the session token stops working', async () => {
      const org = unique('org');
      const address = email();
      const boot = await ok('bootstrap', '--org', org, '--email', address);
      const out = await ok('remove-member', '--org', org, '--email', address);
      expect(out).toStrictEqual({ removed: true });
      expectBearerRejected(
        await t
          .http()
          .get('/v1/user-api-keys')
          .set(bearer(boot.session_token as string)),
      );
      await fails(['remove-member', '--org', org, '--email', address], /is not a member/);
    });
  });

  describe('set-token-lifetime', () => {
    it.each([[60], [86400], [900]])('sets %i seconds, which the next exchange uses', async (seconds) => {
      const org = unique('org');
      const boot = await ok('bootstrap', '--org', org, '--email', email());
      const out = await ok('set-token-lifetime', '--org', org, '--seconds', String(seconds));
      expect(out).toStrictEqual({ organization_id: boot.organization_id, access_token_lifetime: seconds });

      const created = await t
        .http()
        .post('/v1/user-api-keys')
        .set(bearer(boot.session_token as string))
        .send({})
        .expect(201);
      const exchanged = await t.http().post('/v1/token').set(apiKeyAuth(created.body.opaque_key)).expect(200);
      expect(exchanged.body.expires_in).toBe(seconds);
    });

    it.each([['59'], ['86401'], ['0'], ['sixty'], ['']])('refuses --seconds %j with exit 2', async (seconds) => {
      const org = unique('org');
      await ok('bootstrap', '--org', org, '--email', email());
      await fails(['set-token-lifetime', '--org', org, '--seconds', seconds], /--seconds/);
    });

    it('refuses a missing --seconds with exit 2', async () => {
      await fails(['set-token-lifetime', '--org', 'x'], /--seconds is required/);
    });
  });

  describe('set-key-policy', () => {
    it.each([
      ['1', 1],
      ['3650', 3650],
      ['90', 90],
      ['none', null],
    ])('--max-key-lifetime-days %s sets %p, which the API shows', async (days, expected) => {
      const org = unique('org');
      const boot = await ok('bootstrap', '--org', org, '--email', email());
      const out = await ok('set-key-policy', '--org', org, '--max-key-lifetime-days', days);
      expect(out).toStrictEqual({ organization_id: boot.organization_id, max_key_lifetime_days: expected });
      const read = await t
        .http()
        .get('/v1/organization')
        .set(bearer(boot.session_token as string))
        .expect(200);
      expect(read.body.organization).toMatchObject({ max_key_lifetime_days: expected, access_token_lifetime: 1800 });
    });

    it('none removes a policy that was set', async () => {
      const org = unique('org');
      await ok('bootstrap', '--org', org, '--email', email());
      await ok('set-key-policy', '--org', org, '--max-key-lifetime-days', '30');
      const out = await ok('set-key-policy', '--org', org, '--max-key-lifetime-days', 'none');
      expect(out.max_key_lifetime_days).toBeNull();
    });

    it.each([['0'], ['3651'], ['1.5'], ['-1'], ['abc'], [''], ['None'], ['null']])(
      'refuses --max-key-lifetime-days %j with exit 2 and changes nothing',
      async (days) => {
        const org = unique('org');
        const boot = await ok('bootstrap', '--org', org, '--email', email());
        await fails(
          ['set-key-policy', '--org', org, `--max-key-lifetime-days=${days}`],
          /--max-key-lifetime-days must be an integer from 1 to 3650, or none/,
        );
        const read = await t
          .http()
          .get('/v1/organization')
          .set(bearer(boot.session_token as string))
          .expect(200);
        expect(read.body.organization.max_key_lifetime_days).toBeNull();
      },
    );

    it.each([
      [['set-key-policy', '--org', 'x'], /--max-key-lifetime-days is required/],
      [['set-key-policy', '--max-key-lifetime-days', '30'], /--org is required/],
      [['set-key-policy', '--org', 'no-such-org-cli', '--max-key-lifetime-days', '30'], /organization not found/],
    ])('refuses %j with exit 2', async (argv, message) => {
      await fails(argv, message);
    });
  });

  describe('settings changes are audited like the API', () => {
    it('set-key-policy and set-token-lifetime each record organization.updated with no actor', async () => {
      const org = unique('org');
      const boot = await ok('bootstrap', '--org', org, '--email', email());
      await ok('set-key-policy', '--org', org, '--max-key-lifetime-days', '14');
      await ok('set-token-lifetime', '--org', org, '--seconds', '600');
      // A refused command records nothing.
      await fails(['set-token-lifetime', '--org', org, '--seconds', '59'], /--seconds/);

      const events: Array<Record<string, unknown>> = await t.get(DataSource).query(
        `SELECT action, organization_id, actor_user_id, actor_api_key_id, target_type, target_id, client_ip, request_id
           FROM audit_events WHERE organization_id = '${boot.organization_id as string}' ORDER BY occurred_at, id`,
      );
      const expected = {
        action: 'organization.updated',
        organization_id: boot.organization_id,
        actor_user_id: null,
        actor_api_key_id: null,
        target_type: 'organization',
        target_id: boot.organization_id,
        client_ip: null,
        request_id: null,
      };
      expect(events).toEqual([expected, expected]);
    });
  });

  describe('usage errors', () => {
    it.each([
      [['frobnicate'], /unknown command: frobnicate/],
      [[], /exactly one command/],
      [['bootstrap', 'session', '--org', 'x', '--email', 'a@example.com'], /exactly one command/],
      [['bootstrap', '--org', 'x', '--email', 'a@example.com', '--colour', 'red'], /colour/],
    ])('%j -> exit 2 with usage on stderr and empty stdout', async (argv, message) => {
      await fails(argv, message);
      expect((await cli(...argv)).stderr).toContain('usage:');
    });
  });
});
