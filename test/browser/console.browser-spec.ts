import { BrowserContext, Page, Request } from 'playwright-core';
import { FakeDatadog } from '../support/fakes/fake-datadog';
import { untilPasses } from '../support/wait';
import {
  ConsoleBrowser,
  containsText,
  countOf,
  expectAccessible,
  focused,
  NARROW,
  overflowOf,
  screenshot,
  textOf,
  visible,
  WIDE,
} from './console-browser';
import type { ConsoleServer } from './console-server';

/**
 * The web console (docs/console.md) in headless Chromium (Debian's `chromium` package) against the
 * built server with the fake Datadog: what a person sees and does. One server and one browser for
 * the file; the tests run in order and build on each other (the audit log shows what the earlier
 * ones did). Screenshots of every page, at 1280 and 390 px, go to test-artifacts/console/.
 */
const KEY = /^[a-z0-9]{1,16}\.[0-9a-f]{32}\.[A-Za-z0-9_-]{43}\.[0-9a-f]{8}$/;

/** A key id as the console and the key string write it: 32 hex digits. */
const compact = (id: string): string => id.replaceAll('-', '');

describe('web console in Chromium', () => {
  let suite: ConsoleBrowser;
  let server: ConsoleServer;
  let fake: FakeDatadog;
  let admin: { context: BrowserContext; page: Page; userId: string };
  let memberId: string;
  const created: {
    revokedKeyId?: string;
    rotated?: { oldId: string; newId: string; secret: string };
    memberKeyId?: string;
    secrets: string[];
    codes: string[];
  } = { secrets: [], codes: [] };

  const ADMIN = 'admin@example.com';
  const MEMBER = 'member@example.com';
  const ORG = 'acme';

  async function newPage(viewport = WIDE): Promise<{ context: BrowserContext; page: Page }> {
    const opened = await suite.newPage({ viewport, clipboard: true });
    // The console talks to its own origin only, and only to the console's files and the public API.
    opened.page.on('request', (request) => {
      const url = new URL(request.url());
      if (url.origin !== server.baseUrl || !/^\/(console\/|console$|v1\/)/.test(url.pathname)) {
        throw new Error(`unexpected request from the console: ${request.method()} ${request.url()}`);
      }
    });
    return opened;
  }

  async function signIn(page: Page, email: string): Promise<void> {
    const url = await server.signInLink(ORG, email);
    created.codes.push(new URL(url).hash.slice('#code='.length));
    await page.goto(url);
    await page.getByRole('heading', { name: 'My API keys' }).waitFor();
  }

  /** Exchanges a key at POST /v1/token, as a script using it would. */
  async function exchange(
    key: string,
    userAgent = 'console-tests/1.0',
  ): Promise<{ status: number; body: Record<string, unknown> }> {
    const response = await fetch(`${server.baseUrl}/v1/token`, {
      method: 'POST',
      headers: { Authorization: `ApiKey ${key}`, 'User-Agent': userAgent },
    });
    return { status: response.status, body: (await response.json()) as Record<string, unknown> };
  }

  beforeAll(async () => {
    fake = await FakeDatadog.start();
    suite = await ConsoleBrowser.start({ MONITORING_API_BASE_URL: fake.url });
    server = suite.server;
    const { userId } = await server.member(ORG, ADMIN, 'admin');
    memberId = (await server.member(ORG, MEMBER, 'member')).userId;
    admin = { ...(await newPage()), userId };
  }, 120_000);

  afterAll(async () => {
    await suite?.stop();
    await fake?.close();
  });

  it('signs in with a one-time link: the code leaves the address bar; a used or invalid link says so', async () => {
    await signIn(admin.page, ADMIN);
    expect(admin.page.url()).toBe(`${server.baseUrl}/console/keys`);
    expect(await admin.page.evaluate(() => window.history.length)).toBeLessThanOrEqual(2);
    await visible(admin.page.getByText(`${ORG} · admin`));
    // Who is signed in, in the header of every page.
    await textOf(admin.page.getByRole('banner').getByTestId('signed-in-as'), `Signed in as ${ADMIN}`);

    // The same link again, in another browser: refused, in words.
    const other = await newPage();
    await other.page.goto(`/console/sign-in#code=${created.codes[0]}`);
    await textOf(
      other.page.getByRole('alert'),
      'This sign-in link has already been used. Each link works once: ask an administrator for a new one.',
    );
    expect(other.page.url()).toBe(`${server.baseUrl}/console/sign-in`);
    // Opened once more in that tab (only the fragment changes): tried again and refused again, not loading for ever.
    const tried = other.page.waitForResponse(
      (response) => response.request().method() === 'POST' && response.url().endsWith('/v1/console/sessions'),
      { timeout: 10_000 },
    );
    await other.page.goto(`${server.baseUrl}/console/sign-in#code=${created.codes[0]}`);
    expect((await tried).status()).toBe(401);
    await textOf(
      other.page.getByRole('alert'),
      'This sign-in link has already been used. Each link works once: ask an administrator for a new one.',
    );
    expect(await other.page.getByText(/Loading your session/).count()).toBe(0);
    await screenshot(other.page, 'sign-in-used-link');
    await expectAccessible(other.page);
    const late = await server.signInLink(ORG, ADMIN);
    await server.expireLink(new URL(late).hash.slice('#code='.length));
    await other.page.goto(late);
    await textOf(
      other.page.getByRole('alert'),
      'This sign-in link has expired: links are valid for 10 minutes. Ask an administrator for a new one.',
    );
    await screenshot(other.page, 'sign-in-expired-link');
    await other.page.goto('/console/sign-in#code=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA');
    await containsText(other.page.getByRole('alert'), 'This sign-in link is not valid.');
    // Without a session every page leads to the sign-in page.
    await other.page.goto('/console/integrations');
    await other.page.waitForURL('**/console/sign-in');
    await visible(other.page.getByRole('heading', { name: 'How to sign in' }));
    await screenshot(other.page, 'sign-in');
    await other.context.close();
  });

  it('creates a key: the secret is shown once, copies, works, and is kept nowhere; then revokes it', async () => {
    const page = admin.page;
    await page.getByRole('button', { name: 'Create key' }).click();
    await page.getByLabel('Label').fill('ci deploys');
    await screenshot(page, 'create-key');
    await expectAccessible(page);
    await page.getByRole('button', { name: 'Create key' }).click();

    const secret = (await page.getByTestId('new-secret').textContent()) ?? '';
    expect(secret).toMatch(KEY);
    created.secrets.push(secret);
    await visible(page.getByText('Copy it now: you will not see this again.'));
    await page.getByRole('button', { name: 'Copy key' }).click();
    await visible(page.getByText('Copied to the clipboard.'));
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(secret);
    await screenshot(page, 'new-key-secret');
    await expectAccessible(page);

    // Not in storage, not in the address.
    const storage = await page.evaluate(() => JSON.stringify({ ...sessionStorage, ...localStorage }));
    expect(storage).toContain('gatehouse.console.session');
    expect(storage).not.toContain(secret);
    expect(page.url()).not.toContain(secret.split('.')[2]);

    // The key works.
    expect(await exchange(secret)).toMatchObject({ status: 200, body: { token_type: 'Bearer' } });

    await page.getByRole('button', { name: 'Done, I have stored it' }).click();
    await countOf(page.getByTestId('new-secret'), 0);
    expect(await page.content()).not.toContain(secret);

    const row = page.getByRole('row', { name: /ci deploys/ });
    await visible(row.getByText('ACTIVE'));
    created.revokedKeyId = (await row.getAttribute('data-key-id')) ?? undefined;
    await screenshot(page, 'my-keys');
    await expectAccessible(page);

    // Times say their time zone; the key id is written as in the key string (32 hex digits).
    await textOf(row.locator('td[data-label="Created"]'), /(UTC|GMT)/);
    const shortId = compact(created.revokedKeyId!).slice(0, 8);
    await containsText(row.locator('th[data-label="Label"]'), compact(created.revokedKeyId!));
    expect(secret.split('.')[1]).toBe(compact(created.revokedKeyId!));
    // Dialogs and notices name a key by label and id, so two keys of one label differ.
    await row.getByRole('button', { name: `Revoke “ci deploys” (${shortId}…)` }).click();
    const dialog = page.getByRole('dialog', { name: `Revoke “ci deploys” (${shortId}…)?` });
    await visible(dialog);
    await containsText(dialog, 'never used');
    await screenshot(page, 'revoke-dialog');
    await dialog.getByRole('button', { name: 'Revoke key' }).click();
    await visible(page.getByText(`Key “ci deploys” (${shortId}…) revoked.`));
    await countOf(page.getByRole('row', { name: /ci deploys/ }), 0);
    await page.getByLabel('Show revoked keys').check();
    await visible(page.getByRole('row', { name: /ci deploys/ }).getByText('REVOKED'));
    await page.getByLabel('Show revoked keys').uncheck();

    expect(await exchange(secret)).toEqual({
      status: 401,
      body: { code: 'UNAUTHENTICATED', message: 'api key revoked', reason: 'api_key_revoked' },
    });
  });

  it('is usable with the keyboard alone: create a key and dismiss its secret', async () => {
    const page = admin.page;
    await page.getByRole('button', { name: 'Create key' }).focus();
    await page.keyboard.press('Enter');
    await visible(page.getByLabel('Label'));
    await page.getByLabel('Label').focus();
    await page.keyboard.type('keyboard key');
    await page.keyboard.press('Enter'); // submits the form
    await focused(page.getByRole('heading', { name: /Your new key “keyboard key”/ }));
    created.secrets.push((await page.getByTestId('new-secret').textContent()) ?? '');
    await page.keyboard.press('Tab'); // Copy key
    await page.keyboard.press('Tab'); // Done
    await focused(page.getByRole('button', { name: 'Done, I have stored it' }));
    await page.keyboard.press('Enter');
    await countOf(page.getByTestId('new-secret'), 0);
    // A dialog takes the focus and Escape closes it.
    await page.getByRole('button', { name: /^Revoke “keyboard key” \(/ }).click();
    await visible(page.getByRole('dialog'));
    await page.keyboard.press('Escape');
    await countOf(page.getByRole('dialog'), 0);
  });

  it('creates a key with scopes and an expiry, and rotates it with a grace period', async () => {
    const page = admin.page;
    const posted: unknown[] = [];
    const record = (request: Request) => {
      if (request.method() === 'POST' && new URL(request.url()).pathname === '/v1/user-api-keys') {
        posted.push(request.postDataJSON());
      }
    };
    page.on('request', record);
    await page.getByRole('button', { name: 'Create key' }).click();
    await page.getByLabel('Label').fill('reporting');
    await page.getByLabel('Expires').selectOption('30');
    await page.getByRole('checkbox', { name: /integrations:write/ }).uncheck();
    await page.getByRole('checkbox', { name: /api_keys:manage/ }).check();
    await page.getByRole('button', { name: 'Create key' }).click();
    const first = (await page.getByTestId('new-secret').textContent()) ?? '';
    page.off('request', record);
    created.secrets.push(first);
    // The scopes go in catalogue order, the expiry 30 days ahead.
    expect(posted).toEqual([
      {
        label: 'reporting',
        scopes: ['api_keys:read', 'api_keys:manage', 'audit:read', 'integrations:read'],
        expires_at: expect.any(String),
      },
    ]);
    const days = (Date.parse((posted[0] as { expires_at: string }).expires_at) - Date.now()) / 86400_000;
    expect(days).toBeGreaterThan(29.9);
    expect(days).toBeLessThanOrEqual(30);
    await page.getByRole('button', { name: 'Done, I have stored it' }).click();

    // The list shows what the server stored.
    const row = page.getByRole('row', { name: /reporting/ });
    await untilPasses(async () =>
      expect(await row.locator('.scopes li').allTextContents()).toEqual([
        'api_keys:read',
        'api_keys:manage',
        'audit:read',
        'integrations:read',
      ]),
    );
    await containsText(row.locator('td[data-label="Expires"]'), '(in 30 days)');
    await containsText(row.locator('td[data-label="Last used"]'), 'never used');
    const firstId = (await row.getAttribute('data-key-id'))!;

    const firstShort = `${compact(firstId).slice(0, 8)}…`;
    await row.getByRole('button', { name: `Rotate “reporting” (${firstShort})` }).click();
    const dialog = page.getByRole('dialog', { name: `Rotate “reporting” (${firstShort})` });
    await dialog.getByLabel('Grace period for the old key').selectOption('3600');
    await screenshot(page, 'rotate-dialog');
    await expectAccessible(page);
    await dialog.getByRole('button', { name: 'Rotate key' }).click();
    await visible(
      page.getByText(/The old key “reporting” \([0-9a-f]{8}…\) keeps working for 1 hour, until .*(UTC|GMT)/),
    );
    const second = (await page.getByTestId('new-secret').textContent()) ?? '';
    created.secrets.push(second);
    expect(second).toMatch(KEY);
    expect(second).not.toBe(first);
    await screenshot(page, 'rotated');
    await page.getByRole('button', { name: 'Done, I have stored it' }).click();
    // Both work during the grace period; the new key has the same scopes, the old one ends within the hour.
    expect((await exchange(first)).status).toBe(200);
    expect(await exchange(second)).toMatchObject({
      status: 200,
      body: { scope: 'api_keys:read api_keys:manage audit:read integrations:read' },
    });
    await countOf(page.getByRole('row', { name: /reporting/ }), 2);
    const old = page.locator(`tr[data-key-id="${firstId}"]`);
    await containsText(old.locator('td[data-label="Expires"]'), '(in 1 hour)');
    const newId = await page
      .locator('tr[data-key-id]')
      .filter({ hasText: 'reporting' })
      .first()
      .getAttribute('data-key-id');
    expect(newId).not.toBe(firstId);
    created.rotated = { oldId: firstId, newId: newId!, secret: second };
    // Which key replaces which, and until when the old one works; the old one offers no second rotation.
    const newShort = `${compact(newId!).slice(0, 8)}…`;
    const fresh = page.locator(`tr[data-key-id="${newId}"]`);
    await containsText(
      old.locator('td[data-label="Status"]'),
      `Replaced by “reporting” (${newShort}) · grace period until`,
    );
    await containsText(fresh.locator('td[data-label="Status"]'), `Replaces “reporting” (${firstShort})`);
    await countOf(old.getByRole('button', { name: /^Rotate/ }), 0);
    await countOf(fresh.getByRole('button', { name: /^Rotate/ }), 1);
    // Revoking the old one names it, and says it is in its grace period.
    await old.getByRole('button', { name: `Revoke “reporting” (${firstShort})` }).click();
    const revokeOld = page.getByRole('dialog', { name: `Revoke “reporting” (${firstShort})?` });
    await containsText(revokeOld, 'replaced by a rotation');
    await screenshot(page, 'revoke-replaced-key');
    await revokeOld.getByRole('button', { name: 'Cancel' }).click();
    await countOf(page.getByRole('dialog'), 0);

    // The grace period over, the old key is EXPIRED: nothing is offered on it, and it no longer works.
    await server.expireKey(firstId);
    await page.reload();
    await containsText(old.locator('td[data-label="Status"]'), 'EXPIRED');
    // Where the new key was last used from: the exchange above.
    const used = page.locator(`tr[data-key-id="${newId}"] td[data-label="Last used"]`);
    await containsText(used, 'from 127.0.0.1');
    await containsText(used, 'console-tests/1.0');
    await countOf(old.getByRole('button'), 0);
    await screenshot(page, 'expired-key');
    expect(await exchange(first)).toEqual({
      status: 401,
      body: { code: 'UNAUTHENTICATED', message: 'api key expired', reason: 'api_key_expired' },
    });
  });

  it('offers a member only what the role may do', async () => {
    const member = await newPage();
    await signIn(member.page, MEMBER);
    await textOf(member.page.getByRole('banner').getByTestId('signed-in-as'), `Signed in as ${MEMBER}`);
    const nav = member.page.getByRole('navigation', { name: 'Console' });
    await untilPasses(async () =>
      expect(await nav.getByRole('link').allTextContents()).toEqual([
        'My keys',
        'Workload identities',
        'Connected apps',
        'Integrations',
      ]),
    );
    await member.page.getByRole('link', { name: 'Integrations' }).click();
    await visible(member.page.getByRole('heading', { name: 'Integrations' }));
    await countOf(member.page.getByRole('link', { name: 'New integration' }), 0);
    // A key of theirs may carry only what their role has; the management ones start unticked.
    await member.page.getByRole('link', { name: 'My keys' }).click();
    await member.page.getByRole('button', { name: 'Create key' }).click();
    const scopes = member.page.getByRole('group', { name: /Scopes/ }).getByRole('checkbox');
    const values = (checkedOnly: boolean) =>
      scopes.evaluateAll(
        (boxes, only) =>
          boxes
            .map((box) => box as HTMLInputElement)
            .filter((box) => !only || box.checked)
            .map((box) => box.value),
        checkedOnly,
      );
    await untilPasses(async () =>
      expect(await values(false)).toEqual([
        'api_keys:create',
        'api_keys:read',
        'api_keys:revoke',
        'integrations:read',
        'workload_identities:create',
        'workload_identities:read',
        'workload_identities:revoke',
      ]),
    );
    expect(await values(true)).toEqual(['api_keys:read', 'integrations:read']);
    await member.page.getByRole('button', { name: 'Cancel' }).click();
    for (const path of [
      '/console/settings',
      '/console/audit',
      '/console/organization/keys',
      '/console/integrations/new',
    ]) {
      await member.page.goto(path);
      await visible(member.page.getByRole('heading', { name: 'Page not found' }));
    }
    await member.context.close();
  });

  it("lets an admin see where a member's key was last used from, and revoke it", async () => {
    const member = await newPage();
    await signIn(member.page, MEMBER);
    await member.page.getByRole('button', { name: 'Create key' }).click();
    await member.page.getByLabel('Label').fill('member laptop');
    await member.page.getByRole('button', { name: 'Create key' }).click();
    const secret = (await member.page.getByTestId('new-secret').textContent()) ?? '';
    created.secrets.push(secret);
    expect((await exchange(secret, 'laptop-sync/3.4 (member)')).status).toBe(200);
    // The member sees the use on their own list.
    await member.page.getByRole('button', { name: 'Done, I have stored it' }).click();
    await member.page.reload();
    const own = member.page.getByRole('row', { name: /member laptop/ });
    await containsText(own.locator('td[data-label="Last used"]'), 'from 127.0.0.1');
    await containsText(own.locator('td[data-label="Last used"]'), 'laptop-sync/3.4 (member)');

    const page = admin.page;
    await page.getByRole('link', { name: 'Organization keys' }).click();
    const row = page.getByRole('row', { name: /member laptop/ });
    await visible(row.getByText('ACTIVE'));
    created.memberKeyId = (await row.getAttribute('data-key-id')) ?? undefined;
    await containsText(row.locator('td[data-label="Last used"]'), 'from 127.0.0.1');
    await containsText(row.locator('td[data-label="Last used"]'), 'laptop-sync/3.4 (member)');
    // Filtered to the member: the admin's own keys are not listed.
    // The owner by e-mail beside the id; filtered to the member by e-mail address.
    await containsText(row.locator('td[data-label="Owner"]'), MEMBER);
    await containsText(row.locator('td[data-label="Owner"]'), memberId);
    await page.getByLabel('Member (e-mail or user id)').fill(MEMBER.toUpperCase());
    await page.getByRole('button', { name: 'Filter' }).click();
    await countOf(page.getByRole('row', { name: /reporting/ }), 0);
    await visible(row);
    await screenshot(page, 'organization-keys');
    await expectAccessible(page);
    await row.getByRole('button', { name: /^Revoke “member laptop” \(/ }).click();
    await containsText(page.getByRole('dialog'), `This key belongs to ${MEMBER}`);
    await page.getByRole('dialog').getByRole('button', { name: 'Revoke key' }).click();
    await visible(page.getByText(/^Key “member laptop” \([0-9a-f]{8}…\) of member@example\.com revoked\.$/));
    expect((await exchange(secret)).status).toBe(401);
    await member.context.close();
  });

  it('refuses to save an integration with a missing required permission, then saves it once granted', async () => {
    const page = admin.page;
    fake.revoke('slos_read', 'usage_read');
    await page.getByRole('link', { name: 'Integrations' }).click();
    await visible(page.getByText('No integrations yet.'));
    await page.getByRole('link', { name: 'New integration' }).click();
    await page.getByLabel('Name').fill('Production monitoring');
    await page.getByLabel('Site').selectOption('datadoghq.eu');
    await page.getByLabel('API key', { exact: true }).fill('dd-api-key-0000000000001234');
    await page.getByLabel('Application key').fill('dd-app-key-0000000000005678');
    await page.getByRole('button', { name: 'Validate' }).click();

    const checks = page.getByRole('table', { name: 'Permission checks' });
    await countOf(checks.getByRole('row'), 15); // a header and the fourteen checks
    const slos = checks.getByRole('row', { name: /slos_read/ });
    await containsText(slos, 'Required');
    await containsText(slos, 'Missing');
    await containsText(checks.getByRole('row', { name: /usage_read/ }), 'Optional');
    await containsText(checks.getByRole('row', { name: /monitors_read/ }), 'Granted');
    await visible(page.getByText('Cannot be saved: missing slos_read.'));
    await screenshot(page, 'integration-validation');
    await expectAccessible(page);

    await page.getByRole('button', { name: 'Save integration' }).click();
    await textOf(
      page.getByRole('alert'),
      'Not saved: required permissions are missing: slos_read. Grant them to the application key at the provider, then validate again.',
    );
    await screenshot(page, 'integration-blocked-save');

    fake.grant('slos_read');
    await page.getByRole('button', { name: 'Validate' }).click();
    await visible(page.getByText('Can be saved.'));
    await page.getByRole('button', { name: 'Save integration' }).click();
    await visible(page.getByText('Integration “Production monitoring” saved.'));
    const row = page.getByRole('row', { name: /Production monitoring/ });
    await containsText(row, 'datadoghq.eu');
    await containsText(row, '1234');
    await containsText(row, '5678');
    expect(await page.content()).not.toContain('dd-api-key-0000000000001234');
    await screenshot(page, 'integrations');
    await expectAccessible(page);

    await row.getByRole('link', { name: 'Edit Production monitoring' }).click();
    await containsText(page.getByText(/Stored keys:/), '1234');
    expect(await page.getByLabel('API key', { exact: true }).inputValue()).toBe('');
    await screenshot(page, 'integration-edit');
    await expectAccessible(page);
    fake.grant('usage_read');
  });

  it('shows every API error as a sentence, never a raw body', async () => {
    const page = admin.page;
    await page.goto('/console/integrations/00000000-0000-4000-8000-000000000000');
    await textOf(page.getByRole('alert'), 'This integration does not exist any more.');
    expect(await page.locator('main').textContent()).not.toMatch(/NOT_FOUND|"code"/);
  });

  it('shows in the audit log what was done, filtered by action', async () => {
    const page = admin.page;
    await page.getByRole('link', { name: 'Audit log' }).click();
    await visible(page.getByRole('row', { name: /integration\.created/ }).first());
    // The rotation: the new key, and the one it replaces.
    const rotated = page.getByRole('row', { name: /api_key\.rotated/ });
    await countOf(rotated, 1);
    await containsText(rotated, compact(created.rotated!.newId));
    await containsText(rotated, `replaces ${compact(created.rotated!.oldId)}`);
    await containsText(rotated, admin.userId);
    // Who, by e-mail beside the id; the key by its label beside its id.
    await containsText(rotated.locator('td[data-label="Actor"]'), ADMIN);
    await containsText(rotated.locator('td[data-label="Target"]'), '“reporting”');
    await screenshot(page, 'audit-log');
    await expectAccessible(page);
    await page.getByLabel('Action').selectOption('api_key.revoked');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    const revoked = page.getByRole('row', { name: /api_key\.revoked/ });
    await countOf(revoked.filter({ hasText: compact(created.revokedKeyId ?? 'none') }), 1);
    await containsText(revoked.filter({ hasText: compact(created.revokedKeyId ?? 'none') }), 'user');
    // The admin's revocation of the member's key, with its reason.
    await containsText(revoked.filter({ hasText: compact(created.memberKeyId ?? 'none') }), 'admin');
    await countOf(page.getByRole('row', { name: /integration\.created/ }), 0);
    await countOf(page.getByRole('row', { name: /api_key\.rotated/ }), 0);
    await screenshot(page, 'audit-log-revoked');
  });

  it('offers every action the log records, and finds an actor by e-mail address as by user id', async () => {
    const page = admin.page;
    await page.getByRole('link', { name: 'My keys' }).click();
    await page.getByRole('link', { name: 'Audit log' }).click();
    await visible(page.getByRole('row', { name: /console\.signed_in/ }));
    // Every action the server records, the console's sign-ins and sign-outs included.
    expect(await page.getByLabel('Action').locator('option').allTextContents()).toEqual([
      'Any action',
      'api_key.created',
      'api_key.revoked',
      'api_key.rotated',
      'api_key.updated',
      'token.exchange_failed',
      'integration.created',
      'integration.updated',
      'integration.deleted',
      'organization.updated',
      'console.signed_in',
      'console.sign_in_refused',
      'console.signed_out',
      'member.added',
      'member.role_changed',
      'member.removed',
      'member.invited',
      'member.invitation_revoked',
      'trusted_issuer.added',
      'trusted_issuer.removed',
      'trusted_issuer.updated',
      'webhook.created',
      'webhook.deleted',
      'webhook.disabled',
      'webhook.enabled',
      'webhook.secret_rotated',
      'workload_identity.created',
      'workload_identity.revoked',
      'workload_identity.exchanged',
      'grant.granted',
      'grant.refreshed',
      'grant.revoked',
      'oauth_client.created',
      'oauth_client.removed',
    ]);
    await page.getByLabel('Action').selectOption('console.sign_in_refused');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    // The used and the expired link of the first test.
    const refused = page.getByRole('row', { name: /console\.sign_in_refused/ });
    await untilPasses(async () => expect(await refused.count()).toBeGreaterThanOrEqual(2));
    await containsText(refused.filter({ hasText: 'used' }), ADMIN);

    // The member's doings, found by their e-mail address (any case), as on the organization keys page.
    await page.getByLabel('Action').selectOption('');
    await page.getByLabel(/^Actor/).fill(MEMBER.toUpperCase());
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await visible(page.getByRole('row', { name: /api_key\.created/ }));
    await countOf(page.getByRole('alert'), 0);
    const actors = await page.locator('tbody td[data-label="Actor"]').allTextContents();
    expect(actors.length).toBeGreaterThanOrEqual(3); // two sign-ins and a key
    for (const actor of actors) expect(actor).toContain(memberId);
    await containsText(page.getByRole('row', { name: /api_key\.created/ }), '“member laptop”');
    await countOf(page.getByRole('row', { name: /console\.signed_in/ }), 2);
    await screenshot(page, 'audit-log-actor');
    // By user id, the same rows; someone unknown has none; a value that is neither says so, in words.
    await page.getByLabel(/^Actor/).fill(memberId);
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await untilPasses(async () =>
      expect(await page.locator('tbody td[data-label="Actor"]').allTextContents()).toEqual(actors),
    );
    await page.getByLabel(/^Actor/).fill('nobody@example.com');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await visible(page.getByText('No events match.'));
    await page.getByLabel(/^Actor/).fill('member');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await textOf(
      page.getByRole('alert'),
      'Name the actor by e-mail address (dev@acme.test) or user id (a UUID such as 3f2b…-…).',
    );
    await expectAccessible(page);
    await page.getByLabel(/^Actor/).fill('');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await countOf(page.getByRole('alert'), 0);
  });

  it('pages through the audit log: 50 events, then the older ones on request, none twice, none left out', async () => {
    // 60 more events, made through the API, each with a request id of its own to find its row by.
    const { session_token: token } = await server.cli('session', '--email', ADMIN, '--org', ORG);
    const call = async (method: string, path: string, id: string): Promise<Record<string, unknown>> => {
      const response = await fetch(`${server.baseUrl}${path}`, {
        method,
        headers: {
          Authorization: `Bearer ${String(token)}`,
          'Content-Type': 'application/json',
          'X-Request-Id': id,
        },
        body: method === 'POST' ? '{}' : undefined,
      });
      expect(response.status).toBeLessThan(300);
      return (await response.json()) as Record<string, unknown>;
    };
    const idOf = (what: string, i: number) => `paging-${what}-${String(i).padStart(2, '0')}`;
    const requestIds: string[] = [];
    for (let i = 0; i < 30; i += 1) {
      const created = (await call('POST', '/v1/user-api-keys', idOf('create', i))) as { api_key: { id: string } };
      await call('DELETE', `/v1/user-api-keys/${created.api_key.id}`, idOf('revoke', i));
      requestIds.push(idOf('create', i), idOf('revoke', i));
    }
    const { audit_events: all } = (await call('GET', '/v1/audit-events?limit=200', 'paging-count')) as {
      audit_events: unknown[];
    };
    expect(all.length).toBeGreaterThan(60);
    expect(all.length).toBeLessThan(150);

    const page = admin.page;
    await page.getByRole('link', { name: 'My keys' }).click();
    await page.getByRole('link', { name: 'Audit log' }).click();
    const rows = page.locator('tbody tr');
    await countOf(rows, 50);
    // Newest first: the last revocation heads the first page, the first creation is not on it.
    await containsText(rows.first(), 'paging-revoke-29');
    await countOf(rows.filter({ hasText: 'paging-create-00' }), 0);
    await page.getByRole('button', { name: 'Show older events' }).click();
    const pages = Math.ceil(all.length / 50);
    for (let shown = 2; shown < pages; shown += 1) {
      await countOf(rows, 50 * shown);
      await page.getByRole('button', { name: 'Show older events' }).click();
    }
    await countOf(rows, all.length);
    for (const id of requestIds) await countOf(rows.filter({ hasText: id }), 1);
    await countOf(page.getByRole('button', { name: 'Show older events' }), 0);
  });

  it('changes the organization settings; the create form then offers only lifetimes within the policy', async () => {
    const page = admin.page;
    await page.getByRole('link', { name: 'Settings' }).click();
    await page.getByLabel('Access token lifetime (seconds)').fill('900');
    await page.getByLabel('Limit how long a new key may live').check();
    await page.getByLabel('Longest key lifetime (days)').fill('30');
    await page.getByRole('button', { name: 'Save settings' }).click();
    await visible(page.getByText('Settings saved.'));
    await visible(page.getByText(/access tokens live 15 minutes; new keys live at most 30 days/));
    await screenshot(page, 'settings');
    await expectAccessible(page);
    // Stored: the page shows it again after a reload, and an access token now lives 15 minutes.
    await page.reload();
    expect(await page.getByLabel('Access token lifetime (seconds)').inputValue()).toBe('900');
    expect(await page.getByLabel('Longest key lifetime (days)').inputValue()).toBe('30');
    expect(await exchange(created.rotated!.secret)).toMatchObject({
      status: 200,
      body: { expires_in: 900 },
    });

    await page.getByRole('link', { name: 'My keys' }).click();
    await page.getByRole('button', { name: 'Create key' }).click();
    await visible(page.getByText('Your organization limits keys to 30 days.'));
    const expiry = page.getByLabel('Expires');
    await untilPasses(async () =>
      expect(await expiry.locator('option').allTextContents()).toEqual([
        'Longest allowed (30 days)',
        '30 days',
        'On a date…',
      ]),
    );
    await page.getByRole('button', { name: 'Cancel' }).click();

    // The policy off again.
    await page.getByRole('link', { name: 'Settings' }).click();
    await page.getByLabel('Limit how long a new key may live').uncheck();
    await page.getByRole('button', { name: 'Save settings' }).click();
    await visible(page.getByText(/access tokens live 15 minutes; keys may live for ever/));
  });

  it('every page fits 1280 px and 390 px, with no serious axe-core violation, and a screenshot of each', async () => {
    const pages = [
      '/console/keys',
      '/console/organization/keys',
      '/console/audit',
      '/console/settings',
      '/console/organization/oauth-apps',
      '/console/integrations',
      '/console/integrations/new',
    ];
    for (const viewport of [WIDE, NARROW]) {
      await admin.page.setViewportSize(viewport);
      for (const path of pages) {
        await admin.page.goto(path);
        await admin.page.getByRole('heading', { level: 1 }).waitFor();
        await admin.page.waitForFunction(
          () => document.querySelector('[role="status"]')?.textContent?.startsWith('Loading') !== true,
        );
        const overflow = await overflowOf(admin.page);
        expect({ path, width: viewport.width, overflow }).toEqual({ path, width: viewport.width, overflow: 0 });
        await screenshot(admin.page, `page${path.replace(/\//g, '-')}`);
        await expectAccessible(admin.page);
      }
    }
    await admin.page.setViewportSize(WIDE);
  });

  it('serves /console with its security headers', async () => {
    const response = await fetch(`${server.baseUrl}/console/keys`);
    expect(response.status).toBe(200);
    const csp = response.headers.get('content-security-policy') ?? '';
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).not.toContain('unsafe-inline');
    expect(response.headers.get('x-frame-options')).toBe('DENY');
    expect(response.headers.get('referrer-policy')).toBe('no-referrer');
  });

  it('signs out right after signing in, without a reload: the token ends on the server, in every tab', async () => {
    // Signed in on this page (no reload since): the sign-in page must not start again from the used code.
    const { context, page } = await newPage();
    await signIn(page, ADMIN);
    const token = await page.evaluate(
      () => (JSON.parse(sessionStorage.getItem('gatehouse.console.session') ?? '{}') as { token?: string }).token,
    );
    expect(token).toEqual(expect.any(String));
    const keys = (bearer: string) =>
      fetch(`${server.baseUrl}/v1/user-api-keys`, { headers: { Authorization: `Bearer ${bearer}` } });
    expect((await keys(token!)).status).toBe(200);
    // A session token the command line printed (README's $SESSION), alive until the sign-out.
    const { session_token: printed } = await server.cli('session', '--email', ADMIN, '--org', ORG);
    expect((await keys(String(printed))).status).toBe(200);

    await page.getByRole('button', { name: 'Sign out' }).click();
    await visible(page.getByText('You are signed out.'));
    // The page says what else ended, where the member reads that they are signed out.
    await textOf(
      page.getByRole('status'),
      `You are signed out. Every session of yours in ${ORG} has ended with this one: your other tabs, and the session tokens the admin command line printed for you (gatehouse bootstrap, gatehouse session).`,
    );
    await page.waitForURL('**/console/sign-in');
    expect(await page.getByText(/Loading your session/).count()).toBe(0);
    expect(await page.evaluate(() => sessionStorage.length)).toBe(0);
    // The token no longer works anywhere, nor does the admin's other tab's, nor the command line's.
    expect((await keys(token!)).status).toBe(401);
    expect((await keys(String(printed))).status).toBe(401);
    await admin.page.goto('/console/keys');
    await visible(admin.page.getByText('Your session has ended. Sign in again with a new link.'));

    // The used link opened again in this same tab: refused in words, as in a new tab, not loading for ever.
    const used = created.codes.at(-1)!;
    const tried = page.waitForResponse(
      (response) => response.request().method() === 'POST' && response.url().endsWith('/v1/console/sessions'),
      { timeout: 10_000 },
    );
    await page.goto(`${server.baseUrl}/console/sign-in#code=${used}`);
    expect((await tried).status()).toBe(401);
    await textOf(
      page.getByRole('alert'),
      'This sign-in link has already been used. Each link works once: ask an administrator for a new one.',
    );
    expect(await page.getByText(/Loading your session/).count()).toBe(0);
    expect(page.url()).toBe(`${server.baseUrl}/console/sign-in`);
    await screenshot(page, 'sign-in-used-link-same-tab');

    // A new link signs in again at once.
    await signIn(page, ADMIN);
    await context.close();
  });

  it('renders the API documentation at /docs under its content security policy, with no violation', async () => {
    const context = await suite.browser.newContext({ viewport: WIDE, baseURL: server.baseUrl });
    const page = await context.newPage();
    const refused: string[] = [];
    page.on('console', (message) => {
      if (/Content Security Policy|Refused to/i.test(message.text())) refused.push(message.text());
    });
    page.on('pageerror', (error) => refused.push(error.message));
    await page.goto('/docs');
    await untilPasses(async () => expect(await page.locator('.opblock').count()).toBeGreaterThan(10));
    await visible(page.getByText('/v1/token', { exact: true }));
    expect(refused).toEqual([]);
    await context.close();
  });

  it('wrote no key secret and no sign-in code to the server log', () => {
    expect(server.output).toContain('"path":"/console/keys"');
    for (const secret of created.secrets.filter(Boolean)) expect(server.output).not.toContain(secret.split('.')[2]);
    for (const code of created.codes) expect(server.output).not.toContain(code);
  });
});
