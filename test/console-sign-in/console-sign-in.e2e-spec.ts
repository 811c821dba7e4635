import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DataSource } from 'typeorm';
import type { CliResult } from '../../src/cli';
import { startTestCli, TestCli } from '../support/cli';
import { ConsoleSignInService } from '../../src/console-sign-in/console-sign-in.service';
import { PERMISSION_CATALOGUE } from '../support/api-key-records';
import {
  bearer,
  decodeJwt,
  expectBearerRejected,
  expectError,
  expectInvalidArgument,
  UUID,
} from '../support/http-assertions';
import { createTestApp, DATABASE_KIND, TestApp, TestUser } from '../support/test-app';
import { SET_UP_TIMEOUT_MS } from '../support/timeouts';

/**
 * Console sign-in without passwords (docs/api.md#post-v1consolesessions): the admin CLI prints a
 * one-time link with the code in its fragment; POST /v1/console/sessions trades the code, once,
 * within 10 minutes, for a session token.
 */
describe('console sign-in links', () => {
  let t: TestApp;
  let second: TestApp;
  let admin: TestUser;
  let commands: TestCli;

  beforeAll(async () => {
    t = await createTestApp({ env: { PUBLIC_BASE_URL: 'https://gatehouse.example.com/' } });
    second = await createTestApp({ database: t.database, env: { PUBLIC_BASE_URL: 'https://gatehouse.example.com' } });
    admin = await t.user({ org: 'console-org' });
    commands = await startTestCli(t.env);
  }, SET_UP_TIMEOUT_MS);
  afterAll(async () => {
    await commands?.close();
    await second.close();
    await t.close();
  });

  const cli = (...argv: string[]): Promise<CliResult> => commands.run(...argv);
  const codeOf = (url: string): string => new URL(url).hash.replace(/^#code=/, '');

  async function link(user: TestUser = admin): Promise<{ url: string; code: string }> {
    const result = await cli('console-link', '--org', 'console-org', '--email', user.email);
    expect({ exitCode: result.exitCode, stderr: result.stderr }).toEqual({ exitCode: 0, stderr: '' });
    const out = JSON.parse(result.stdout);
    return { url: out.url, code: codeOf(out.url) };
  }

  const signIn = (code: unknown, app: TestApp = t) =>
    app.http().post('/v1/console/sessions').set('Content-Type', 'application/json').send({ code });

  function expectRefused(
    response: { status: number; body: unknown; headers: Record<string, string> },
    message: string,
    reason: string,
  ) {
    expect({ status: response.status, body: response.body }).toStrictEqual({
      status: 401,
      body: { code: 'UNAUTHENTICATED', message, reason },
    });
    expect(response.headers['www-authenticate']).toBe('SignInLink realm="gatehouse"');
  }

  it('console-link prints a link to the console with the code in the fragment, valid 10 minutes', async () => {
    const result = await cli('console-link', '--org', 'console-org', '--email', admin.email);
    expect(result.exitCode).toBe(0);
    const out = JSON.parse(result.stdout);
    expect(out).toStrictEqual({ url: expect.any(String), expires_at: expect.any(String), expires_in: 600 });
    expect(out.url).toMatch(/^https:\/\/gatehouse\.example\.com\/console\/sign-in#code=[A-Za-z0-9_-]{43}$/);
    const lifetime = Date.parse(out.expires_at) - Date.now();
    expect(lifetime).toBeGreaterThan(590_000);
    expect(lifetime).toBeLessThanOrEqual(600_000);
  });

  it('stores only a hash of the code', async () => {
    const { code } = await link();
    const rows: Array<Record<string, unknown>> = await t.get(DataSource).query('SELECT * FROM console_sign_in_links');
    expect(JSON.stringify(rows)).not.toContain(code);
    const hash = createHash('sha256').update(code).digest('hex');
    expect(rows.filter((row) => row.code_hash === hash)).toHaveLength(1);
  });

  it('trades the code for a one-hour session token that works on the API', async () => {
    const { code } = await link();
    const response = await signIn(code).expect(200);
    expect(response.headers['cache-control']).toBe('no-store');
    expect(response.body).toStrictEqual({
      session_token: expect.any(String),
      token_type: 'Bearer',
      expires_in: 3600,
      user_id: admin.userId,
      email: admin.email,
      organization: { id: admin.organizationId, name: 'console-org' },
      role: 'admin',
      permissions: PERMISSION_CATALOGUE,
    });
    const { payload } = decodeJwt(response.body.session_token);
    expect(payload).toMatchObject({ sub: admin.userId, org: admin.organizationId, token_use: 'session' });
    expect((payload.exp as number) - (payload.iat as number)).toBe(3600);
    await t.http().get('/v1/user-api-keys').set(bearer(response.body.session_token)).expect(200);
  });

  it("an administrator's link works in any browser: without a single sign-on cookie, or with anyone's", async () => {
    for (const cookie of [undefined, `gatehouse_sso=${randomBytes(32).toString('base64url')}`]) {
      const { code } = await link();
      const request = t.http().post('/v1/console/sessions');
      const response = await (cookie === undefined ? request : request.set('Cookie', cookie)).send({ code });
      expect({ status: response.status, user: response.body.user_id }).toEqual({ status: 200, user: admin.userId });
      // A single sign-on cookie the browser had is removed all the same (it binds nothing any more).
      expect(response.headers['set-cookie']).toEqual(
        cookie === undefined
          ? undefined
          : ['gatehouse_sso=; Path=/v1/console; Max-Age=0; HttpOnly; SameSite=Lax; Secure'],
      );
    }
  });

  it("answers a member's role and permissions", async () => {
    const viewer = await t.user({ org: 'console-org', role: 'viewer' });
    const response = await signIn((await link(viewer)).code).expect(200);
    expect(response.body).toMatchObject({
      user_id: viewer.userId,
      role: 'viewer',
      permissions: [
        'api_keys:read',
        'api_keys:revoke',
        'integrations:read',
        'workload_identities:read',
        'workload_identities:revoke',
      ],
    });
  });

  it('a link works once: the second use is refused, on this instance or another', async () => {
    const { code } = await link();
    await signIn(code).expect(200);
    expectRefused(await signIn(code), 'sign-in link already used', 'sign_in_link_used');
    expectRefused(await signIn(code, second), 'sign-in link already used', 'sign_in_link_used');
  });

  it('of concurrent uses of one link on two instances, exactly one signs in', async () => {
    const { code } = await link();
    const responses = await Promise.all(Array.from({ length: 6 }, (_, i) => signIn(code, i % 2 === 0 ? t : second)));
    expect(responses.map((r) => r.status).sort()).toEqual([200, 401, 401, 401, 401, 401]);
  });

  it('an expired link says so', async () => {
    const elevenMinutesAgo = new Date(Date.now() - 11 * 60 * 1000);
    const created = await t.get(ConsoleSignInService).createLink('console-org', admin.email, elevenMinutesAgo);
    expectRefused(await signIn(codeOf(created.url)), 'sign-in link expired', 'sign_in_link_expired');
  });

  it('an unknown or mangled code is an invalid link', async () => {
    expectRefused(await signIn(randomBytes(32).toString('base64url')), 'sign-in link invalid', 'sign_in_link_invalid');
    expectRefused(await signIn('not a code'), 'sign-in link invalid', 'sign_in_link_invalid');
    const { code } = await link();
    expectRefused(
      await signIn(`${code.slice(0, -1)}${code.endsWith('A') ? 'B' : 'A'}`),
      'sign-in link invalid',
      'sign_in_link_invalid',
    );
    // The link is still good: a wrong code did not use it up.
    await signIn(code).expect(200);
  });

  it('a member removed after the link was made is not signed in', async () => {
    const leaver = await t.user({ org: 'console-org', role: 'member' });
    const { code } = await link(leaver);
    await cli('remove-member', '--org', 'console-org', '--email', leaver.email);
    expectRefused(await signIn(code), 'user not authenticated', 'member_removed');
  });

  it('refuses a malformed body with 400', async () => {
    expectInvalidArgument(await signIn(42));
    expectInvalidArgument(await t.http().post('/v1/console/sessions').send({}));
    const { code } = await link();
    expectInvalidArgument(await t.http().post('/v1/console/sessions').send({ code, extra: true }));
  });

  it('console-link refuses a non-member, an unknown organization and missing options (exit 2)', async () => {
    const outsider = await t.user({ org: 'other-console-org' });
    const notMember = await cli('console-link', '--org', 'console-org', '--email', outsider.email);
    expect(notMember).toMatchObject({ exitCode: 2, stdout: '' });
    expect(notMember.stderr).toBe(`error: ${outsider.email} is not a member of console-org\n`);
    const unknownOrg = await cli('console-link', '--org', 'no-such-org', '--email', admin.email);
    expect(unknownOrg).toMatchObject({ exitCode: 2, stdout: '' });
    expect(unknownOrg.stderr).toMatch(/organization not found/);
    const missing = await cli('console-link', '--org', 'console-org');
    expect(missing).toMatchObject({ exitCode: 2, stdout: '' });
    expect(missing.stderr).toMatch(/required option '--email <email>' not specified/);
  });
});

/**
 * Sign-out (docs/api.md#delete-v1consolesessionscurrent): the server ends every session token of the
 * member in that organization issued until then; so does removal, for good, even if the member comes back.
 */
describe('console sign-out', () => {
  let t: TestApp;
  let second: TestApp;
  let commands: TestCli;
  beforeAll(async () => {
    t = await createTestApp();
    second = await createTestApp({ database: t.database });
    commands = await startTestCli(t.env);
  }, SET_UP_TIMEOUT_MS);
  afterAll(async () => {
    await commands?.close();
    await second.close();
    await t.close();
  });

  const cli = (...argv: string[]): Promise<CliResult> => commands.run(...argv);
  const signOut = (token: string, app: TestApp = t) =>
    app.http().delete('/v1/console/sessions/current').set(bearer(token));
  const keys = (token: string, app: TestApp = t) => app.http().get('/v1/user-api-keys').set(bearer(token));
  async function signInWithLink(email: string): Promise<string> {
    const linked = await cli('console-link', '--org', 'sign-out-org', '--email', email);
    const code = new URL(JSON.parse(linked.stdout).url).hash.replace(/^#code=/, '');
    const response = await t.http().post('/v1/console/sessions').send({ code }).expect(200);
    return response.body.session_token;
  }

  it('ends the session token at once, on every instance, with every other session of the member there', async () => {
    const member = await t.user({ org: 'sign-out-org', role: 'member' });
    const other = await signInWithLink(member.email);
    await keys(member.token).expect(200);
    const response = await signOut(member.token);
    expect({ status: response.status, body: response.body }).toEqual({ status: 204, body: {} });
    expectBearerRejected(await keys(member.token), 'session_ended');
    expectBearerRejected(await keys(member.token, second), 'session_ended');
    expectBearerRejected(await keys(other, second), 'session_ended');
    // Signing out again with the ended token is a 401 like any other request.
    expectBearerRejected(await signOut(member.token), 'session_ended');
  });

  it('leaves API keys and their access tokens, other members and other organizations alone', async () => {
    const member = await t.user({ org: 'sign-out-org', role: 'admin' });
    const colleague = await t.user({ org: 'sign-out-org', role: 'member' });
    const elsewhere = await t.user({ org: 'sign-out-other-org', email: member.email, role: 'admin' });
    const key = await t.createKey(member, 'survives sign-out');
    const access = await t.exchange(key.value);
    await signOut(member.token).expect(204);
    await keys(access).expect(200);
    await keys(await t.exchange(key.value)).expect(200);
    await keys(colleague.token).expect(200);
    await keys(elsewhere.token).expect(200);
  });

  it('a new sign-in right after signing out works, by link or by the CLI', async () => {
    const member = await t.user({ org: 'sign-out-org', role: 'member' });
    await signOut(member.token).expect(204);
    await keys(await signInWithLink(member.email)).expect(200);
    const session = await cli('session', '--org', 'sign-out-org', '--email', member.email);
    expect(session.exitCode).toBe(0);
    await keys(JSON.parse(session.stdout).session_token).expect(200);
  });

  it("refuses an API key's access token, whatever its scopes, with 403 and ends nothing", async () => {
    const member = await t.user({ org: 'sign-out-org', role: 'admin' });
    const access = await t.exchange((await t.createKey(member, 'not for sign-out')).value);
    expectError(await signOut(access), 403, 'PERMISSION_DENIED', 'insufficient permissions', 'session_token_required');
    await keys(member.token).expect(200);
    expectBearerRejected(await t.http().delete('/v1/console/sessions/current'));
  });

  it('stores when the sessions ended on the membership', async () => {
    const member = await t.user({ org: 'sign-out-org', role: 'member' });
    const before = Date.now();
    await signOut(member.token).expect(204);
    const rows: Array<{ sessions_valid_after: unknown }> = await t
      .get(DataSource)
      .query(
        DATABASE_KIND === 'postgres'
          ? 'SELECT sessions_valid_after FROM memberships WHERE organization_id = $1 AND user_id = $2'
          : 'SELECT sessions_valid_after FROM memberships WHERE organization_id = ? AND user_id = ?',
        [member.organizationId, member.userId],
      );
    expect(rows).toHaveLength(1);
    const stored = new Date(rows[0].sessions_valid_after as string).getTime();
    expect(stored).toBeGreaterThanOrEqual(before - 1000);
    expect(stored).toBeLessThanOrEqual(Date.now() + 1000);
  });

  it('a member removed and added back does not get their old session tokens back', async () => {
    const member = await t.user({ org: 'sign-out-org', role: 'member' });
    await keys(member.token).expect(200);
    expect((await cli('remove-member', '--org', 'sign-out-org', '--email', member.email)).exitCode).toBe(0);
    expectBearerRejected(await keys(member.token), 'member_removed');
    const back = await t.user({ org: 'sign-out-org', email: member.email, role: 'member' });
    expectBearerRejected(await keys(member.token), 'session_ended');
    await keys(back.token).expect(200);
  });
});

/**
 * Console sign-ins in the audit trail (docs/api.md#audit-events): a sign-in, a refused known link (used, expired, the
 * member removed) and a sign-out, each in the link's organization; an unknown code names no organization.
 */
describe('console sign-ins are audited', () => {
  let t: TestApp;
  let commands: TestCli;
  beforeAll(async () => {
    t = await createTestApp({ env: { TRUST_PROXY: 'loopback' } });
    commands = await startTestCli(t.env);
  }, SET_UP_TIMEOUT_MS);
  afterAll(async () => {
    await commands?.close();
    await t.close();
  });

  const cli = (...argv: string[]): Promise<CliResult> => commands.run(...argv);
  async function linkFor(user: TestUser): Promise<string> {
    const result = await cli('console-link', '--org', 'audited-org', '--email', user.email);
    return new URL(JSON.parse(result.stdout).url).hash.replace(/^#code=/, '');
  }
  const signIn = (code: string) =>
    t
      .http()
      .post('/v1/console/sessions')
      .set('X-Forwarded-For', '203.0.113.77')
      .set('X-Request-Id', `sign-in-${randomBytes(4).toString('hex')}`)
      .send({ code });
  const rows = async (organizationId: string) =>
    (
      await t
        .get(DataSource)
        .query<Array<Record<string, unknown>>>(
          `SELECT action, reason, actor_user_id, target_type, target_id, client_ip, request_id FROM audit_events WHERE organization_id = '${organizationId}' AND action LIKE 'console.%' ORDER BY occurred_at, id`,
        )
    ).map((row) => ({ ...row, request_id: typeof row.request_id === 'string' }));

  it('records console.signed_in, console.sign_in_refused (used, expired, not_a_member) and console.signed_out', async () => {
    const member = await t.user({ org: 'audited-org', role: 'member' });
    const code = await linkFor(member);
    const session = (await signIn(code).expect(200)).body.session_token as string;
    await signIn(code).expect(401);
    const old = await t
      .get(ConsoleSignInService)
      .createLink('audited-org', member.email, new Date(Date.now() - 11 * 60_000));
    await signIn(new URL(old.url).hash.replace(/^#code=/, '')).expect(401);
    await t.http().delete('/v1/console/sessions/current').set(bearer(session)).expect(204);
    const leaver = await t.user({ org: 'audited-org', role: 'member' });
    const leaverCode = await linkFor(leaver);
    await cli('remove-member', '--org', 'audited-org', '--email', leaver.email);
    await signIn(leaverCode).expect(401);
    // An unknown code names no organization: nothing is written anywhere.
    await signIn(randomBytes(32).toString('base64url')).expect(401);

    const seen = (action: string, reason: string | null, user: TestUser, actor: boolean, ip = '203.0.113.77') => ({
      action,
      reason,
      actor_user_id: actor ? user.userId : null,
      target_type: 'user',
      target_id: user.userId,
      client_ip: ip,
      request_id: true,
    });
    expect(await rows(member.organizationId)).toEqual([
      seen('console.signed_in', null, member, true),
      seen('console.sign_in_refused', 'used', member, false),
      seen('console.sign_in_refused', 'expired', member, false),
      { ...seen('console.signed_out', null, member, true), client_ip: expect.any(String) },
      seen('console.sign_in_refused', 'not_a_member', leaver, false),
    ]);
    const total = await t
      .get(DataSource)
      .query<Array<{ n: number | string }>>(`SELECT COUNT(*) AS n FROM audit_events WHERE action LIKE 'console.%'`);
    expect(Number(total[0].n)).toBe(5);
  });

  it('the audit log API lists them and filters by them', async () => {
    const admin = await t.user({ org: 'audited-org', role: 'admin' });
    await signIn(await linkFor(admin)).expect(200);
    const listed = await t.http().get('/v1/audit-events?action=console.signed_in').set(bearer(admin.token)).expect(200);
    expect(listed.body.audit_events.map((event: { target_id: string }) => event.target_id)).toContain(admin.userId);
  });
});

describe('console sign-in failure limit', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp({ env: { CONSOLE_SIGN_IN_FAILURE_LIMIT_PER_MINUTE: '3' } });
  });
  afterAll(() => t.close());

  it('after 3 refused codes from one address the fourth attempt gets 429 with Retry-After; successes do not count', async () => {
    const user = await t.user({ org: 'limited-org' });
    const service = t.get(ConsoleSignInService);
    const good = async () => {
      const created = await service.createLink('limited-org', user.email);
      return new URL(created.url).hash.slice('#code='.length);
    };
    const post = (code: string) => t.http().post('/v1/console/sessions').send({ code });
    // Successes take no slot.
    for (let i = 0; i < 5; i += 1) await post(await good()).expect(200);
    for (let i = 0; i < 3; i += 1) expect((await post(randomBytes(32).toString('base64url'))).status).toBe(401);
    const limited = await post(await good());
    expectError(limited, 429, 'RESOURCE_EXHAUSTED', 'too many requests', 'too_many_failed_sign_ins');
    expect(Number(limited.headers['retry-after'])).toBeGreaterThanOrEqual(1);
  });
});

describe('console static files', () => {
  let assets: string;
  let t: TestApp;
  let unbuilt: TestApp;

  beforeAll(async () => {
    assets = mkdtempSync(join(tmpdir(), 'gatehouse-console-'));
    mkdirSync(join(assets, 'assets'));
    writeFileSync(join(assets, 'index.html'), '<!doctype html><title>Gatehouse console</title>');
    writeFileSync(join(assets, 'assets', 'index-abc123.js'), 'console.log("app")');
    writeFileSync(join(assets, 'favicon.svg'), '<svg xmlns="http://www.w3.org/2000/svg"/>');
    t = await createTestApp({ env: { CONSOLE_ASSETS_DIR: assets } });
    unbuilt = await createTestApp({ env: { CONSOLE_ASSETS_DIR: join(assets, 'missing') } });
  }, SET_UP_TIMEOUT_MS);
  afterAll(async () => {
    await unbuilt.close();
    await t.close();
    rmSync(assets, { recursive: true, force: true });
  });

  function expectSecurityHeaders(headers: Record<string, string>): void {
    const csp = headers['content-security-policy'];
    expect(csp).toMatch(/(^|; )script-src 'self'(;|$)/);
    expect(csp).toMatch(/(^|; )frame-ancestors 'none'(;|$)/);
    expect(csp).toMatch(/(^|; )default-src 'none'(;|$)/);
    expect(csp).not.toContain('unsafe-inline');
    expect(csp).not.toContain('unsafe-eval');
    expect(headers['x-frame-options']).toBe('DENY');
    expect(headers['referrer-policy']).toBe('no-referrer');
    expect(headers['x-content-type-options']).toBe('nosniff');
  }

  it('serves the app at /console/ with its security headers, never cached', async () => {
    const response = await t.http().get('/console/').expect(200);
    expect(response.headers['content-type']).toMatch(/^text\/html/);
    expect(response.text).toContain('Gatehouse console');
    expect(response.headers['cache-control']).toBe('no-cache');
    expectSecurityHeaders(response.headers);
  });

  it("answers every page of the app with index.html (the app's own routing)", async () => {
    for (const path of ['/console/keys', '/console/sign-in', '/console/integrations/new']) {
      const response = await t.http().get(path).expect(200);
      expect(response.text).toContain('Gatehouse console');
      expectSecurityHeaders(response.headers);
    }
  });

  it('redirects /console to /console/', async () => {
    const response = await t.http().get('/console').expect(301);
    expect(response.headers.location).toBe('/console/');
  });

  it('serves hashed assets cached for good, and other files', async () => {
    const script = await t.http().get('/console/assets/index-abc123.js').expect(200);
    expect(script.headers['content-type']).toMatch(/javascript/);
    expect(script.headers['cache-control']).toMatch(/immutable/);
    expectSecurityHeaders(script.headers);
    await t.http().get('/console/favicon.svg').expect(200).expect('Content-Type', /svg/);
  });

  it('a missing asset or another method is the JSON 404', async () => {
    expectError(await t.http().get('/console/assets/nope.js'), 404, 'NOT_FOUND', 'route not found', 'route_not_found');
    expectError(await t.http().post('/console/keys').send({}), 404, 'NOT_FOUND', 'route not found', 'route_not_found');
  });

  it('without a built console, /console is not served', async () => {
    expectError(await unbuilt.http().get('/console/'), 404, 'NOT_FOUND', 'route not found', 'route_not_found');
  });

  it('API routes carry none of the console headers, but every answer says nosniff', async () => {
    const response = await t.http().get('/healthz').expect(200);
    expect(response.headers['content-security-policy']).toBeUndefined();
    expect(response.headers['x-frame-options']).toBeUndefined();
    expect(UUID.test(response.headers['x-request-id'] ?? '')).toBe(true);
    for (const answer of [
      response,
      await t.http().get('/v1/user-api-keys'),
      await t.http().get('/no-such-route'),
      await t.http().post('/v1/token').set('Content-Type', 'application/json').send('{'),
      await t.http().get('/openapi.json'),
    ]) {
      expect(answer.headers['content-type']).toMatch(/^application\/json/);
      expect(answer.headers['x-content-type-options']).toBe('nosniff');
    }
  });
});
