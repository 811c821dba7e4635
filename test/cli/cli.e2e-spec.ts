import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DataSource } from 'typeorm';
import type { CliResult } from '../../src/cli';
import { runTestCli, startTestCli, TestCli } from '../support/cli';
import { TEST_BUILD_DIR_VARIABLE } from '../support/build-directory';
import type { Environment } from '../../src/config/configuration';
import { AuditService } from '../../src/audit/audit.service';
import { IdentityService } from '../../src/identity/identity.service';
import { cliChecks } from '../support/cli';
import { freePort } from '../support/ports';
import { apiKeyAuth, bearer, decodeJwt, expectBearerRejected, expectError, UUID } from '../support/http-assertions';
import { createTestApp, createTestDatabase, TestApp, TestDatabase, testEnvironment } from '../support/test-app';

/** The admin command line (docs/operations.md#admin-cli), run in-process against the test database. */
describe('admin CLI', () => {
  let database: TestDatabase;
  let env: Environment;
  let t: TestApp;
  let commands: TestCli;

  beforeAll(async () => {
    database = createTestDatabase();
    env = testEnvironment(database);
    // The app shares the CLI's database (and migrates it first); an organization makes it a database in use.
    t = await createTestApp({ database });
    await t.user({ org: 'cli-suite' });
    commands = await startTestCli(env);
  });
  afterAll(async () => {
    await commands?.close();
    await t.close();
    await database.drop();
  });

  const cli = (...argv: string[]): Promise<CliResult> => commands.run(...argv);
  const unique = (prefix: string) => `${prefix}-${randomBytes(4).toString('hex')}`;
  const email = () => `${unique('admin')}@example.com`;

  const { ok, fails } = cliChecks(cli);

  /** A key created through the API with a session token the CLI printed: the creation's body. */
  const createKey = async (token: unknown, body: object = {}) =>
    (
      await t
        .http()
        .post('/v1/user-api-keys')
        .set(bearer(token as string))
        .send(body)
        .expect(201)
    ).body;

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
      expect(payload.client_id).toBeUndefined();
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
      // The organization's last admin stays one (below); with another admin, the first may become a viewer.
      await fails(['bootstrap', '--org', org, '--email', address, '--role', 'viewer'], /keeps at least one admin/);
      await ok('bootstrap', '--org', org, '--email', email(), '--role', 'admin');
      const out = await ok('bootstrap', '--org', org, '--email', address, '--role', 'viewer');
      expect(out.role).toBe('viewer');
    });

    it('prints a session token that works against the app on the same database', async () => {
      const out = await ok('bootstrap', '--org', unique('org'), '--email', email());
      const token = out.session_token as string;
      const created = await createKey(token, { label: 'from cli' });
      expect(created.api_key).toMatchObject({ user_id: out.user_id, organization_id: out.organization_id });
      const exchanged = await t.http().post('/v1/token').set(apiKeyAuth(created.opaque_key)).expect(200);
      expect(exchanged.body.expires_in).toBe(1800);
    });

    it('writes nothing when an option is refused', async () => {
      const org = unique('org');
      await fails(['bootstrap', '--org', org, '--email', 'not-an-email'], /--email must be an email address/);
      await fails(['bootstrap', '--org', org, '--email', email(), '--role', 'owner'], /--role must be/);
      await fails(['set-token-lifetime', '--org', org, '--seconds', '60'], /organization not found/);
    });

    it.each([
      [['bootstrap', '--email', 'a@example.com'], /required option '--org <name>' not specified/],
      [['bootstrap', '--org', 'x'], /required option '--email <email>' not specified/],
      [['bootstrap', '--org', 'x', '--email', 'not-an-email'], /--email must be an email address/],
      [['bootstrap', '--org', 'x', '--email', 'a@example.com', '--role', 'owner'], /--role must be/],
      [['bootstrap', '--org', 'x', '--email'], /option '--email <email>' argument missing/],
      [['bootstrap', '--org', '  ', '--email', 'a@example.com'], /--org must be 1 to 255 characters/],
      [['bootstrap', '--org', 'é'.repeat(256), '--email', 'a@example.com'], /--org must be 1 to 255 characters/],
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
      await ok('bootstrap', '--org', org, '--email', email(), '--role', 'admin');

      const out = await ok('set-role', '--org', org, '--email', address, '--role', 'viewer');
      expect(out).toStrictEqual({ organization_id: boot.organization_id, user_id: boot.user_id, role: 'viewer' });
      await t.http().post('/v1/user-api-keys').set(bearer(token)).send({}).expect(403);
      await t.http().get('/v1/user-api-keys').set(bearer(token)).expect(200);
    });

    it("refuses to make the organization's last admin anything else (exit 2, nothing changed, nothing audited)", async () => {
      const org = unique('org');
      const address = email();
      const boot = await ok('bootstrap', '--org', org, '--email', address);
      const events = async () => (await t.get(AuditService).list(boot.organization_id as string)).length;
      const before = await events();
      await fails(
        ['set-role', '--org', org, '--email', address, '--role', 'member'],
        /^error: an organization keeps at least one admin: make another member an admin first\n$/,
      );
      await fails(['remove-member', '--org', org, '--email', address], /keeps at least one admin/);
      expect(await events()).toBe(before);
      await t
        .http()
        .post('/v1/user-api-keys')
        .set(bearer(boot.session_token as string))
        .send({})
        .expect(201);
    });

    it.each([
      [['set-role', '--org', 'x', '--email', 'a@example.com'], /required option '--role <role>' not specified/],
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
      await ok('bootstrap', '--org', org, '--email', email(), '--role', 'admin');
      const out = await ok('remove-member', '--org', org, '--email', address);
      expect(out).toStrictEqual({ removed: true, revoked_keys: 0 });
      expectBearerRejected(
        await t
          .http()
          .get('/v1/user-api-keys')
          .set(bearer(boot.session_token as string)),
        'member_removed',
      );
      await fails(['remove-member', '--org', org, '--email', address], /is not a member/);
    });
  });

  describe("remove-member and the member's keys", () => {
    const dataSource = () => t.get(DataSource);
    const statuses = (userId: string, organizationId: string): Promise<Array<{ id: string; status: string }>> =>
      dataSource().query(
        `SELECT id, status FROM api_keys WHERE user_id = '${userId}' AND organization_id = '${organizationId}' ORDER BY id`,
      );
    const revocations = (organizationId: string): Promise<Array<Record<string, unknown>>> =>
      dataSource().query(
        `SELECT reason, actor_user_id, actor_api_key_id, target_type, target_id, client_ip, request_id FROM audit_events
         WHERE organization_id = '${organizationId}' AND action = 'api_key.revoked' ORDER BY target_id`,
      );

    // Several CLI processes and HTTP calls: over jest's 5 s default on a loaded machine.
    it('revokes every key the member has in the organization, each audited with reason member_removed', async () => {
      const org = unique('org');
      const elsewhere = unique('org');
      const address = email();
      const boot = await ok('bootstrap', '--org', org, '--email', address, '--role', 'member');
      const other = await ok('bootstrap', '--org', elsewhere, '--email', address, '--role', 'member');
      const organizationId = boot.organization_id as string;
      const userId = boot.user_id as string;
      const keys = [];
      for (const label of ['one', 'two', 'expired', 'already revoked']) {
        keys.push(await createKey(boot.session_token, { label }));
      }
      const kept = await createKey(other.session_token, { label: 'in another organization' });
      const colleague = await ok('bootstrap', '--org', org, '--email', email(), '--role', 'member');
      const colleagueKey = await createKey(colleague.session_token, { label: "a colleague's" });
      // An expired key is still ACTIVE in the table: revoked too. A revoked one is left as it is.
      await dataSource().query(
        `UPDATE api_keys SET expires_at = '2020-01-01T00:00:00.000Z' WHERE id = '${keys[2].api_key.id}'`,
      );
      await t
        .http()
        .delete(`/v1/user-api-keys/${keys[3].api_key.id}`)
        .set(bearer(boot.session_token as string))
        .expect(200);

      const out = await ok('remove-member', '--org', org, '--email', address);
      expect(out).toStrictEqual({ removed: true, revoked_keys: 3 });

      expect((await statuses(userId, organizationId)).map((row) => row.status)).toEqual(Array(4).fill('REVOKED'));
      // One entry per key the removal revoked, with no actor (the admin CLI) and no request; the
      // member's own earlier revocation stays the only one of its key.
      const events = await revocations(organizationId);
      expect(events.filter((event) => event.reason === 'member_removed')).toEqual(
        keys
          .slice(0, 3)
          .map((key) => key.api_key.id as string)
          .sort()
          .map((id) => ({
            reason: 'member_removed',
            actor_user_id: null,
            actor_api_key_id: null,
            target_type: 'api_key',
            target_id: id,
            client_ip: null,
            request_id: null,
          })),
      );
      expect(events.filter((event) => event.reason !== 'member_removed')).toEqual([
        expect.objectContaining({ reason: 'user', actor_user_id: userId, target_id: keys[3].api_key.id }),
      ]);
      // The revoked keys are refused as revoked; the same user's key elsewhere and a colleague's key work.
      for (const key of keys.slice(0, 2)) {
        const refused = await t.http().post('/v1/token').set(apiKeyAuth(key.opaque_key));
        expect({ status: refused.status, body: refused.body }).toEqual({
          status: 401,
          body: { code: 'UNAUTHENTICATED', message: 'api key revoked', reason: 'api_key_revoked' },
        });
      }
      await t.http().post('/v1/token').set(apiKeyAuth(kept.opaque_key)).expect(200);
      await t.http().post('/v1/token').set(apiKeyAuth(colleagueKey.opaque_key)).expect(200);
      expect((await statuses(userId, other.organization_id as string)).map((row) => row.status)).toEqual(['ACTIVE']);
    }, 30_000);

    it('adding the user back revives none of the keys', async () => {
      const org = unique('org');
      const address = email();
      await ok('bootstrap', '--org', org, '--email', email(), '--role', 'admin');
      const boot = await ok('bootstrap', '--org', org, '--email', address, '--role', 'member');
      const key = await createKey(boot.session_token, { label: 'before' });
      expect(await ok('remove-member', '--org', org, '--email', address)).toStrictEqual({
        removed: true,
        revoked_keys: 1,
      });

      const back = await ok('bootstrap', '--org', org, '--email', address, '--role', 'member');
      expect(back.user_id).toBe(boot.user_id);
      await ok('set-role', '--org', org, '--email', address, '--role', 'admin');
      const read = await t
        .http()
        .get(`/v1/user-api-keys/${key.api_key.id}`)
        .set(bearer(back.session_token as string))
        .expect(200);
      expect(read.body.api_key.status).toBe('REVOKED');
      await t.http().post('/v1/token').set(apiKeyAuth(key.opaque_key)).expect(401);
      // A new key works as usual.
      const fresh = await createKey(back.session_token, { label: 'after' });
      await t.http().post('/v1/token').set(apiKeyAuth(fresh.opaque_key)).expect(200);
      // Removed again: only the new key is revoked this time.
      expect(await ok('remove-member', '--org', org, '--email', address)).toStrictEqual({
        removed: true,
        revoked_keys: 1,
      });
    });

    it('a creation authenticated before the removal and stored after it is refused (401): no key to revive', async () => {
      const org = unique('org');
      const address = email();
      const boot = await ok('bootstrap', '--org', org, '--email', address, '--role', 'member');
      const identity = t.get(IdentityService);
      const organizationById = identity.organizationById.bind(identity);
      // The creation reads its organization's key policy after the Bearer guard found the member and
      // before it stores the key: the member is removed right there.
      const spy = jest.spyOn(identity, 'organizationById').mockImplementationOnce(async (id) => {
        await ok('remove-member', '--org', org, '--email', address);
        return organizationById(id);
      });
      try {
        const response = await t
          .http()
          .post('/v1/user-api-keys')
          .set(bearer(boot.session_token as string))
          .send({ label: 'late' });
        expect(spy).toHaveBeenCalled();
        expectBearerRejected(response, 'member_removed');
      } finally {
        spy.mockRestore();
      }
      expect(await statuses(boot.user_id as string, boot.organization_id as string)).toEqual([]);
      // Added back: the user has no key, and makes new ones as usual.
      const back = await ok('bootstrap', '--org', org, '--email', address, '--role', 'member');
      await createKey(back.session_token, { label: 'after' });
    });
  });

  describe('set-token-lifetime', () => {
    it.each([[60], [86400], [900]])('sets %i seconds, which the next exchange uses', async (seconds) => {
      const org = unique('org');
      const boot = await ok('bootstrap', '--org', org, '--email', email());
      const out = await ok('set-token-lifetime', '--org', org, '--seconds', String(seconds));
      expect(out).toStrictEqual({ organization_id: boot.organization_id, access_token_lifetime: seconds });

      const created = await createKey(boot.session_token);
      const exchanged = await t.http().post('/v1/token').set(apiKeyAuth(created.opaque_key)).expect(200);
      expect(exchanged.body.expires_in).toBe(seconds);
    });

    it.each([['59'], ['86401'], ['0'], ['sixty'], ['']])('refuses --seconds %j with exit 2', async (seconds) => {
      const org = unique('org');
      await ok('bootstrap', '--org', org, '--email', email());
      await fails(['set-token-lifetime', '--org', org, '--seconds', seconds], /--seconds/);
    });

    it('refuses a missing --seconds with exit 2', async () => {
      await fails(['set-token-lifetime', '--org', 'x'], /required option '--seconds <seconds>' not specified/);
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

    it('the next key created in the organization gets the policy as its lifetime', async () => {
      const org = unique('org');
      const boot = await ok('bootstrap', '--org', org, '--email', email());
      await ok('set-key-policy', '--org', org, '--max-key-lifetime-days', '30');
      const { created_at: createdAt, expires_at: expiresAt } = (await createKey(boot.session_token)).api_key;
      expect(Date.parse(expiresAt) - Date.parse(createdAt)).toBe(30 * 86_400_000);
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
      [['set-key-policy', '--org', 'x'], /required option '--max-key-lifetime-days <days>' not specified/],
      [['set-key-policy', '--max-key-lifetime-days', '30'], /required option '--org <name>' not specified/],
      [['set-key-policy', '--org', 'no-such-org-cli', '--max-key-lifetime-days', '30'], /organization not found/],
    ])('refuses %j with exit 2', async (argv, message) => {
      await fails(argv, message);
    });
  });

  describe('set-key-allowlist-policy', () => {
    const REQUIRED = "allowed_cidrs is required: the organization's key policy requires an allowlist";
    const read = async (token: unknown) =>
      (
        await t
          .http()
          .get('/v1/organization')
          .set(bearer(token as string))
          .expect(200)
      ).body.organization;
    const create = (token: unknown, body: object) =>
      t
        .http()
        .post('/v1/user-api-keys')
        .set(bearer(token as string))
        .send(body);

    it('on requires an allowlist on the next key, as the API policy does; off lifts it; the API shows both', async () => {
      const org = unique('org');
      const boot = await ok('bootstrap', '--org', org, '--email', email());
      expect(await ok('set-key-allowlist-policy', '--org', org, '--required', 'on')).toStrictEqual({
        organization_id: boot.organization_id,
        require_key_allowlist: true,
      });
      expect(await read(boot.session_token)).toMatchObject({
        require_key_allowlist: true,
        max_key_lifetime_days: null,
      });
      expectError(await create(boot.session_token, {}), 400, 'INVALID_ARGUMENT', REQUIRED, 'allowlist_required');
      expectError(
        await create(boot.session_token, { allowed_cidrs: ['0.0.0.0/0'] }),
        400,
        'INVALID_ARGUMENT',
        `allowed_cidrs: "0.0.0.0/0" allows every address, which the organization's key policy forbids`,
        'allowlist_too_broad',
      );
      await createKey(boot.session_token, { allowed_cidrs: ['10.0.0.0/8'] });

      expect(await ok('set-key-allowlist-policy', '--org', org, '--required', 'off')).toStrictEqual({
        organization_id: boot.organization_id,
        require_key_allowlist: false,
      });
      expect((await read(boot.session_token)).require_key_allowlist).toBe(false);
      expect((await createKey(boot.session_token, {})).api_key.allowed_cidrs).toBeNull();
    });

    it.each([['yes'], ['ON'], ['Off'], ['true'], ['false'], ['1'], ['0'], ['']])(
      'refuses --required %j with exit 2 and changes nothing',
      async (value) => {
        const org = unique('org');
        const boot = await ok('bootstrap', '--org', org, '--email', email());
        await ok('set-key-allowlist-policy', '--org', org, '--required', 'on');
        await fails(['set-key-allowlist-policy', '--org', org, `--required=${value}`], /--required must be on or off/);
        expect((await read(boot.session_token)).require_key_allowlist).toBe(true);
      },
    );

    it('refuses an unknown organization with exit 2, creating nothing', async () => {
      const org = unique('org');
      await fails(['set-key-allowlist-policy', '--org', org, '--required', 'on'], /^error: organization not found: /);
      const boot = await ok('bootstrap', '--org', org, '--email', email());
      expect((await read(boot.session_token)).require_key_allowlist).toBe(false);
    });

    it.each([
      [['set-key-allowlist-policy', '--org', 'x'], /required option '--required <on\|off>' not specified/],
      [['set-key-allowlist-policy', '--required', 'on'], /required option '--org <name>' not specified/],
      [['set-key-allowlist-policy', '--org', 'x', '--required'], /option '--required <on\|off>' argument missing/],
    ])('refuses %j with exit 2', async (argv, message) => {
      await fails(argv, message);
    });
  });

  describe('settings changes are audited like the API', () => {
    it('set-key-policy, set-token-lifetime and set-key-allowlist-policy each record organization.updated with no actor', async () => {
      const org = unique('org');
      const boot = await ok('bootstrap', '--org', org, '--email', email());
      await ok('set-key-policy', '--org', org, '--max-key-lifetime-days', '14');
      await ok('set-token-lifetime', '--org', org, '--seconds', '600');
      await ok('set-key-allowlist-policy', '--org', org, '--required', 'on');
      // A refused command records nothing.
      await fails(['set-token-lifetime', '--org', org, '--seconds', '59'], /--seconds/);
      await fails(['set-key-allowlist-policy', '--org', org, '--required', 'yes'], /--required/);

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
      // bootstrap's new member first (docs/operations.md#audit-trail).
      const added = { ...expected, action: 'member.added', target_type: 'user', target_id: boot.user_id };
      expect(events).toEqual([added, expected, expected, expected]);
    });
  });

  describe('usage errors', () => {
    it.each([
      [['frobnicate'], /^error: unknown command 'frobnicate'\n\(run 'gatehouse --help' for the commands\)\n$/],
      [
        ['bootstrap', 'session', '--org', 'x', '--email', 'a@example.com'],
        /^error: too many arguments for 'bootstrap'\. Expected 0 arguments but got 1\.\n\(run 'gatehouse bootstrap --help' for its options\)\n$/,
      ],
      [
        ['bootstrap', '--org', 'x', '--email', 'a@example.com', '--colour', 'red'],
        /^error: unknown option '--colour'\n\(run 'gatehouse bootstrap --help' for its options\)\n$/,
      ],
      [['--colour'], /^error: unknown option '--colour'\n/],
      [
        ['set-token-lifetime', '--seconds', '60'],
        /^error: required option '--org <name>' not specified\n\(run 'gatehouse set-token-lifetime --help' for its options\)\n$/,
      ],
      [['session', '--email'], /^error: option '--email <email>' argument missing\n/],
      // Each command takes its own options only.
      [['session', '--email', 'a@example.com', '--seconds', '60'], /^error: unknown option '--seconds'\n/],
    ])('%j -> exit 2, the error and where to find the usage on stderr, nothing on stdout', async (argv, message) => {
      await fails(argv, message);
    });

    it.each([
      [[] as string[], 'no command given'],
      [['help', 'frobnicate'], "unknown command 'frobnicate'"],
    ])('%j -> exit 2, the reason and the list of commands on stderr', async (argv, reason) => {
      await fails(argv, new RegExp(`^error: ${reason}\nUsage: gatehouse \\[options\\] \\[command\\]\n`));
      expect((await cli(...argv)).stderr).toContain('set-token-lifetime [options]');
    });

    it('an argument is refused before anything is written', async () => {
      const org = unique('org');
      await fails(['bootstrap', '--org', org, '--email', email(), '--colour', 'red'], /unknown option/);
      await fails(['set-key-policy', '--org', org, '--max-key-lifetime-days', '30'], /organization not found/);
    });
  });

  describe('help', () => {
    const COMMANDS = [
      'bootstrap',
      'session',
      'set-role',
      'remove-member',
      'set-key-policy',
      'set-token-lifetime',
      'set-key-allowlist-policy',
      'console-link',
    ];

    /** Exit 0, the help on stdout, nothing on stderr. */
    const help = async (...argv: string[]): Promise<string> => {
      const result = await cli(...argv);
      expect({ exitCode: result.exitCode, stderr: result.stderr }).toEqual({ exitCode: 0, stderr: '' });
      return result.stdout;
    };

    it.each([[['--help']], [['-h']], [['help']]])('%j lists every command on stdout with exit 0', async (argv) => {
      const out = await help(...argv);
      expect(out).toMatch(/^Usage: gatehouse \[options\] \[command\]\n/);
      for (const command of COMMANDS) expect(out).toMatch(new RegExp(`^  ${command} \\[options\\] `, 'm'));
      expect(out).toContain('exit code 2');
    });

    it.each([
      ['bootstrap', ['--org <name>', '--email <email>', '--role <role>']],
      ['session', ['--email <email>', '--org <name>', '--ttl <seconds>', '(default: 3600)']],
      ['set-role', ['--org <name>', '--email <email>', '--role <role>']],
      ['remove-member', ['--org <name>', '--email <email>']],
      ['set-key-policy', ['--org <name>', '--max-key-lifetime-days <days>', 'none']],
      ['set-token-lifetime', ['--org <name>', '--seconds <seconds>', '60..86400']],
      ['set-key-allowlist-policy', ['--org <name>', '--required <on|off>', 'on (required) or off (not required)']],
      ['console-link', ['--org <name>', '--email <email>', 'valid 10 minutes']],
    ])('%s --help (and help %s) shows its options on stdout with exit 0', async (command, options) => {
      for (const out of [await help(command, '--help'), await help('help', command)]) {
        expect(out).toMatch(new RegExp(`^Usage: gatehouse ${command} \\[options\\]\n`));
        for (const option of options) expect(out).toContain(option);
      }
    });

    it('--help wins over the other arguments and runs nothing', async () => {
      const org = unique('org');
      await help('bootstrap', '--org', org, '--email', email(), '--help');
      await fails(['set-token-lifetime', '--org', org, '--seconds', '60'], /organization not found/);
    });
  });

  describe('the built bin (package.json "bin": gatehouse -> dist/cli.js)', () => {
    const built = () => join(process.env[TEST_BUILD_DIR_VARIABLE]!, 'cli.js');
    /** Runs the compiled CLI as its own process, as `npx gatehouse` does. */
    const run = (...argv: string[]) =>
      new Promise<CliResult>((resolve, reject) => {
        execFile(
          process.execPath,
          [built(), ...argv],
          { env: { PATH: process.env.PATH, ...env } },
          (error, stdout, stderr) => {
            if (error === null) resolve({ exitCode: 0, stdout, stderr });
            else if (typeof error.code === 'number') resolve({ exitCode: error.code, stdout, stderr });
            else reject(new Error('the CLI process did not exit', { cause: error }));
          },
        );
      });

    it('is declared as the package bin, and its compiled file starts with a node shebang', () => {
      const manifest = JSON.parse(readFileSync(join(__dirname, '..', '..', 'package.json'), 'utf8'));
      expect(manifest.bin).toEqual({ gatehouse: 'dist/cli.js' });
      expect(manifest.scripts.build).toContain('chmod +x dist/cli.js');
      expect(readFileSync(built(), 'utf8').split('\n')[0]).toBe('#!/usr/bin/env node');
    });

    it('prints help with exit 0, a result as one JSON line with exit 0, and errors with exit 2', async () => {
      const help = await run('--help');
      expect(help).toMatchObject({ exitCode: 0, stderr: '' });
      expect(help.stdout).toMatch(/^Usage: gatehouse \[options\] \[command\]\n/);

      // Each run is a process that loads the whole application (seconds on a busy machine): one of each outcome. The
      // commands' results and refusals are asserted in this process above.
      const org = unique('org');
      const boot = await run('bootstrap', '--org', org, '--email', email());
      expect({ exitCode: boot.exitCode, stderr: boot.stderr }).toEqual({ exitCode: 0, stderr: '' });
      expect(boot.stdout).toMatch(/^\{.*\}\n$/);
      const stored = await t.get(IdentityService).organizationByName(org);
      expect(JSON.parse(boot.stdout)).toMatchObject({ organization_id: stored.id });

      const failed = await run('set-token-lifetime', '--org', org, '--seconds', '59');
      expect({ exitCode: failed.exitCode, stdout: failed.stdout }).toEqual({ exitCode: 2, stdout: '' });
      expect(failed.stderr).toMatch(/^error: /);
    }, 60_000);
  });
});

/**
 * The CLI must share the server's DATA_DIR / DATABASE_URL (its database and local secrets) and PUBLIC_BASE_URL / PORT
 * (its links): a mismatch is said on stderr, after the result (docs/operations.md#admin-cli).
 */
describe('admin CLI: a mismatch with the server is loud', () => {
  let dataDir: string;
  beforeEach(() => {
    dataDir = join(mkdtempSync(join(tmpdir(), 'gatehouse-cli-env-')), 'data');
  });
  afterEach(() => rmSync(join(dataDir, '..'), { recursive: true, force: true }));
  const run = (env: Environment, ...argv: string[]) =>
    runTestCli(argv, { LOG_LEVEL: 'silent', DATA_DIR: dataDir, ...env });
  /** Where no server is asked: the address is configured (a server elsewhere is never called). */
  const ELSEWHERE = { PUBLIC_BASE_URL: 'https://gatehouse.example.com' };

  it('bootstrap on a new DATA_DIR warns of the new database and the new local secrets, once', async () => {
    const first = await run(ELSEWHERE, 'bootstrap', '--org', 'acme', '--email', 'dev@acme.test');
    expect(first.exitCode).toBe(0);
    expect(JSON.parse(first.stdout)).toMatchObject({ role: 'admin' });
    expect(first.stderr.split('\n')).toEqual([
      `warning: the SQLite database ${join(dataDir, 'gatehouse.sqlite')} had no organization before this command: a server already running uses another one unless it has the same DATA_DIR and DATABASE_URL as this command`,
      `warning: generated new local secrets in ${join(dataDir, 'local-secrets.json')}: the server must run with the same DATA_DIR (or the same configured secrets), or the tokens this command prints get 401 there`,
      '',
    ]);
    const again = await run(ELSEWHERE, 'bootstrap', '--org', 'acme', '--email', 'dev@acme.test');
    expect({ exitCode: again.exitCode, stderr: again.stderr }).toEqual({ exitCode: 0, stderr: '' });
  });

  it('a session token from a CLI on another DATA_DIR than the server is refused there: the warning said why', async () => {
    const server = await createTestApp({
      env: { API_KEY_PEPPER: undefined, JWT_PRIVATE_KEY: undefined, INTEGRATIONS_ENCRYPTION_KEY: undefined },
    });
    try {
      const elsewhere = await run(ELSEWHERE, 'bootstrap', '--org', 'acme', '--email', 'dev@acme.test');
      expect(elsewhere.stderr).toContain('generated new local secrets');
      const token = JSON.parse(elsewhere.stdout).session_token as string;
      expectBearerRejected(await server.http().get('/v1/user-api-keys').set(bearer(token)), 'token_invalid');
    } finally {
      await server.close();
    }
  });

  it('console-link without PUBLIC_BASE_URL, and no server at the address it assumed, says so; with it, nothing', async () => {
    await run(ELSEWHERE, 'bootstrap', '--org', 'acme', '--email', 'dev@acme.test');
    const port = await freePort();
    const guessed = await run({ PORT: String(port) }, 'console-link', '--org', 'acme', '--email', 'dev@acme.test');
    expect(JSON.parse(guessed.stdout).url).toMatch(new RegExp(`^http://localhost:${port}/console/sign-in#code=`));
    expect(guessed.stderr).toBe(
      `warning: PUBLIC_BASE_URL is not set, so the link printed above assumes the server at http://localhost:${port} (PORT=${port}), but no server answers there; run this command with the server's PORT, or set PUBLIC_BASE_URL to the address browsers reach the server at\n`,
    );
    const configured = await run(ELSEWHERE, 'console-link', '--org', 'acme', '--email', 'dev@acme.test');
    expect({ exitCode: configured.exitCode, stderr: configured.stderr }).toEqual({ exitCode: 0, stderr: '' });
  });

  it("--help says to run it with the server's environment", async () => {
    const help = await run({}, '--help');
    expect(help.stdout).toContain('the same DATA_DIR and DATABASE_URL');
    expect(help.stdout).toContain('PUBLIC_BASE_URL');
  });
});

/**
 * README's set-up: the server runs without JWT_ISSUER or PUBLIC_BASE_URL, so the CLI assumes it at
 * http://localhost:<PORT> and asks it whether it accepts what the command printed: silent when it does (the first run
 * of a new installation included), a warning that says why when it does not (docs/operations.md#admin-cli).
 */
describe('admin CLI: the server at the address it assumed', () => {
  let port: number;
  let server: TestApp;
  /** The server's environment as README runs it: no JWT_ISSUER, no PUBLIC_BASE_URL, its own PORT. */
  const local = (extra: Environment = {}): Environment => ({ PORT: String(port), JWT_ISSUER: undefined, ...extra });

  beforeEach(async () => {
    port = await freePort();
    server = await createTestApp({ env: local() });
    await server.app.listen(port, '127.0.0.1');
  });
  afterEach(() => server.close());

  const cli = (env: Environment, ...argv: string[]) => runTestCli(argv, env);
  const organizationWith = (token: string) => server.http().get('/v1/organization').set(bearer(token));

  it("says nothing on the first run of a new installation (the server's empty database), nor after", async () => {
    const env = { ...server.env, ...local() };
    const first = await cli(env, 'bootstrap', '--org', 'fresh', '--email', 'admin@fresh.test');
    expect({ exitCode: first.exitCode, stderr: first.stderr }).toEqual({ exitCode: 0, stderr: '' });
    await organizationWith(JSON.parse(first.stdout).session_token).expect(200);
    const session = await cli(env, 'session', '--email', 'admin@fresh.test');
    expect({ exitCode: session.exitCode, stderr: session.stderr }).toEqual({ exitCode: 0, stderr: '' });
    const link = await cli(env, 'console-link', '--org', 'fresh', '--email', 'admin@fresh.test');
    expect({ exitCode: link.exitCode, stderr: link.stderr }).toEqual({ exitCode: 0, stderr: '' });
    expect(JSON.parse(link.stdout).url).toMatch(new RegExp(`^http://localhost:${port}/console/sign-in#code=`));
  });

  it('without PORT (the server on another one) it warns that it guessed, and the 401 its token gets is explained', async () => {
    const env = { ...server.env, ...local({ PORT: undefined }) };
    const guessed = await cli(env, 'bootstrap', '--org', 'elsewhere', '--email', 'admin@elsewhere.test');
    expect(guessed.exitCode).toBe(0);
    // Whatever answers at :3000 on this machine (nothing, or another server), it does not accept this token.
    expect(guessed.stderr).toMatch(
      /^warning: JWT_ISSUER and PUBLIC_BASE_URL are not set, so the session token printed above is for a server at http:\/\/localhost:3000 \(PORT is not set either: the default, 3000\), but .*401 user not authenticated.*run this command with the server's (PORT|JWT_ISSUER|DATA_DIR)/,
    );
    expect(guessed.stderr.split('\n')).toHaveLength(2);
    expectBearerRejected(await organizationWith(JSON.parse(guessed.stdout).session_token), 'token_invalid');
  });

  it('with a PORT where no server answers, it says so and names the fix', async () => {
    const other = await freePort();
    const env = { ...server.env, ...local({ PORT: String(other) }) };
    const result = await cli(env, 'session', '--email', (await server.user({ org: 'moved' })).email);
    expect(result.exitCode).toBe(0);
    expect(result.stderr).toBe(
      `warning: JWT_ISSUER and PUBLIC_BASE_URL are not set, so the session token printed above is for a server at http://localhost:${other} (PORT=${other}), but no server answers there: a server at another address refuses the token (401 user not authenticated); run this command with the server's PORT (or its PUBLIC_BASE_URL or JWT_ISSUER)\n`,
    );
    expectBearerRejected(await organizationWith(JSON.parse(result.stdout).session_token), 'token_invalid');
  });

  it('a server there with another issuer: the warning names it', async () => {
    await server.close();
    server = await createTestApp({ env: local({ JWT_ISSUER: 'https://gatehouse.test' }) });
    await server.app.listen(port, '127.0.0.1');
    const env = { ...server.env, ...local() };
    const result = await cli(env, 'bootstrap', '--org', 'issuer', '--email', 'admin@issuer.test');
    expect(result.stderr).toBe(
      `warning: JWT_ISSUER and PUBLIC_BASE_URL are not set, so the session token printed above is for a server at http://localhost:${port} (PORT=${port}), but the Gatehouse there has the issuer https://gatehouse.test: it refuses the token (401 user not authenticated); run this command with the server's JWT_ISSUER and PUBLIC_BASE_URL\n`,
    );
    expectBearerRejected(await organizationWith(JSON.parse(result.stdout).session_token), 'token_invalid');
  });

  it('a server there on another database (same secrets): the warning names it', async () => {
    const other = createTestDatabase();
    try {
      const env = testEnvironment(other, local());
      const result = await cli(env, 'bootstrap', '--org', 'database', '--email', 'admin@database.test');
      expect(result.stderr).toBe(
        `warning: JWT_ISSUER and PUBLIC_BASE_URL are not set, so the session token printed above is for a server at http://localhost:${port} (PORT=${port}), but the Gatehouse there uses another database: it refuses the token (401 user not authenticated); run this command with the server's DATA_DIR and DATABASE_URL\n`,
      );
      expectBearerRejected(await organizationWith(JSON.parse(result.stdout).session_token), 'member_removed');
    } finally {
      await other.drop();
    }
  });
});
