import type { BrowserContext, Locator, Page } from 'playwright-core';
import { IdentityProvider } from '../support/identity-provider';
import { freePort } from '../support/ports';
import { atBothWidths, ConsoleBrowser, screenshot, textOf, visible } from './console-browser';
import type { ConsoleServer } from './console-server';
import { buildIdentityProviderWorker } from './identity-provider-build';

/**
 * The console's people pages in headless Chromium against the built server (docs/console.md#pages, docs/api.md#members,
 * docs/console.md#single-sign-on): an admin invites a person, whose own browser signs in through the one-time link;
 * changes their role and removes them; sets up single sign-on with node-oidc-provider as the company's identity
 * provider (tested, the redirect URI copied, the secret never shown back), through which a person then signs in; and
 * turns on the key allowlist policy. Screenshots at 1280 and 390 px go to test-artifacts/console/.
 */
const ORG = 'people-co';
const ADMIN = 'ada@people.test';
const NEWCOMER = 'nora@people.test';

describe('web console: members and single sign-on', () => {
  let removeWorker: () => void;
  let suite: ConsoleBrowser;
  let server: ConsoleServer;
  let idp: IdentityProvider;
  let admin: { context: BrowserContext; page: Page };

  const newPage = () => suite.newPage({ clipboard: true });

  const row = (page: Page, email: string): Locator => page.getByTestId('member').filter({ hasText: email });

  beforeAll(async () => {
    removeWorker = await buildIdentityProviderWorker();
    suite = await ConsoleBrowser.start();
    server = suite.server;
    idp = await IdentityProvider.start({ redirectUris: [`${server.baseUrl}/v1/console/sso/callback`] });
    await server.member(ORG, ADMIN, 'admin');
    await server.member(ORG, 'mo@people.test', 'member');
    admin = await newPage();
    await suite.signIn(admin.page, ORG, ADMIN);
  }, 120_000);

  afterAll(async () => {
    await suite?.stop();
    await IdentityProvider.stopAll();
    removeWorker?.();
  });

  it('invites a person by a one-time link, which signs them in in their own browser; changes their role; removes them', async () => {
    const page = admin.page;
    await page.getByRole('link', { name: 'Members' }).click();
    await page.getByRole('heading', { name: 'Members', level: 1 }).waitFor();
    await visible(row(page, ADMIN));
    await textOf(row(page, ADMIN).locator('td[data-label="Role"]'), 'admin');
    await textOf(row(page, 'mo@people.test').locator('td[data-label="Last sign-in"]'), 'Not recorded');
    expect(await row(page, ADMIN).locator('td[data-label="Last sign-in"]').textContent()).toMatch(/\d{4}/);

    await page.getByRole('button', { name: 'Invite member' }).click();
    await page.getByLabel('E-mail address').fill(NEWCOMER);
    await page.getByRole('radio', { name: /^member/ }).check();
    await screenshot(page, 'members-invite-form');
    await page.getByRole('button', { name: 'Create invitation link' }).click();
    const link = ((await page.getByTestId('new-secret').textContent()) ?? '').trim();
    expect(link).toMatch(new RegExp(`^${server.baseUrl}/console/sign-in#invitation=[A-Za-z0-9_-]{43}$`));
    await page.getByRole('button', { name: 'Copy link' }).click();
    await visible(page.getByText('Copied to the clipboard.'));
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(link);
    await visible(page.getByTestId('invitation').filter({ hasText: NEWCOMER }));
    await atBothWidths(page, 'members-invitation-link');
    await page.getByRole('button', { name: 'Done, I have stored it' }).click();
    expect(await page.getByTestId('new-secret').count()).toBe(0);
    // The link is nowhere in the page's storage.
    expect(await page.evaluate(() => JSON.stringify({ ...sessionStorage, ...localStorage }))).not.toContain(
      link.split('=')[1],
    );

    // Nora opens it in her own browser: signed in as a member, the invitation gone from the list.
    const nora = await newPage();
    await nora.page.goto(link);
    await nora.page.getByRole('heading', { name: 'My API keys' }).waitFor();
    await textOf(nora.page.getByRole('banner').getByTestId('signed-in-as'), `Signed in as ${NEWCOMER}`);
    await visible(nora.page.getByText(`${ORG} · member`));
    expect(nora.page.url()).toBe(`${server.baseUrl}/console/keys`);
    // A member sees nothing of the people pages, even by their address.
    expect(await nora.page.getByRole('link', { name: 'Members' }).count()).toBe(0);
    expect(await nora.page.getByRole('link', { name: 'Single sign-on' }).count()).toBe(0);
    await nora.page.goto('/console/organization/members');
    await nora.page.getByRole('heading', { name: 'Page not found' }).waitFor();
    // Used once: the same link in another browser is refused in words.
    const late = await newPage();
    await late.page.goto(link);
    await textOf(
      late.page.getByRole('alert'),
      'This invitation has already been used. Each invitation works once: if it was not you, tell an administrator.',
    );
    await screenshot(late.page, 'invitation-used');
    await late.context.close();

    await page.reload();
    await visible(row(page, NEWCOMER));
    expect(await page.getByTestId('invitation').count()).toBe(0);
    await textOf(row(page, NEWCOMER).locator('td[data-label="Role"]'), 'member');
    expect(await row(page, NEWCOMER).locator('td[data-label="Last sign-in"]').textContent()).toMatch(/\d{4}/);

    // Role change, in a dialog: applies to Nora's next request.
    await page.getByRole('button', { name: `Change role of ${NEWCOMER}` }).click();
    const dialog = page.getByRole('dialog');
    await dialog.getByRole('radio', { name: /^viewer/ }).check();
    await atBothWidths(page, 'members-change-role');
    await dialog.getByRole('button', { name: 'Save role' }).click();
    await visible(page.getByText(`${NEWCOMER} is now a viewer.`));
    await textOf(row(page, NEWCOMER).locator('td[data-label="Role"]'), 'viewer');

    // The last admin stays: the refusal is a sentence in the dialog, which stays open.
    await page.getByRole('button', { name: `Change role of ${ADMIN}` }).click();
    await dialog.getByRole('radio', { name: /^member/ }).check();
    await dialog.getByRole('button', { name: 'Save role' }).click();
    await textOf(
      dialog.getByRole('alert'),
      'An organization keeps at least one admin: make another member an admin first.',
    );
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    await textOf(row(page, ADMIN).locator('td[data-label="Role"]'), 'admin');

    // Removal: confirmed, Nora's session ends with it.
    await page.getByRole('button', { name: `Remove ${NEWCOMER}` }).click();
    await visible(dialog.getByText(/every key, workload identity and app access of theirs here is revoked/));
    await screenshot(page, 'members-remove-dialog');
    await dialog.getByRole('button', { name: 'Remove member' }).click();
    await visible(page.getByText(`${NEWCOMER} removed; 0 keys revoked.`));
    expect(await row(page, NEWCOMER).count()).toBe(0);
    await atBothWidths(page, 'members');
    await nora.page.goto('/console/keys');
    await nora.page.getByRole('heading', { name: 'Sign in to the Gatehouse console' }).waitFor();
    await nora.context.close();
  });

  it('sets up single sign-on: tests the provider, shows the redirect URI to copy, never shows the secret back', async () => {
    const page = admin.page;
    await page.getByRole('link', { name: 'Single sign-on' }).click();
    await page.getByRole('heading', { name: 'Single sign-on', level: 1 }).waitFor();
    await visible(page.getByText(`${ORG} has no single sign-on: members sign in with one-time links.`));

    // A provider that does not answer: said in words.
    const nowhere = `http://127.0.0.1:${await freePort()}`;
    await page.getByLabel('Issuer URL').fill(nowhere);
    await page.getByRole('button', { name: 'Test the connection' }).click();
    await textOf(page.getByRole('alert'), new RegExp(`^Cannot fetch ${nowhere}/\\.well-known/openid-configuration: `));
    await screenshot(page, 'sso-test-failed');

    await page.getByLabel('Issuer URL').fill(idp.issuer);
    await page.getByRole('button', { name: 'Test the connection' }).click();
    const redirectUri = `${server.baseUrl}/v1/console/sso/callback`;
    await textOf(page.getByTestId('redirect-uri'), redirectUri);
    await visible(page.getByTestId('discovery').getByText(`${idp.issuer}/token`));
    await page.getByRole('button', { name: 'Copy Redirect URI to register at the identity provider' }).click();
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(redirectUri);

    await page.getByLabel('Client ID').fill(idp.people.clientId);
    const secret = page.getByLabel('Client secret');
    expect(await secret.getAttribute('type')).toBe('password');
    await secret.fill(idp.people.clientSecret);
    await page.getByLabel('E-mail domains').fill('people.test');
    await page.getByLabel('People who are not members yet').selectOption('viewer');
    await atBothWidths(page, 'sso-setup');
    await page.getByRole('button', { name: 'Save single sign-on' }).click();
    await visible(page.getByText(/^Single sign-on saved\./));
    await textOf(page.getByTestId('saved-redirect-uri'), redirectUri);
    expect(await secret.inputValue()).toBe('');

    // Opened again: the setting as stored, the secret field empty, the redirect URI found again.
    await page.reload();
    await visible(
      page.getByText(new RegExp(`^Members of ${ORG} sign in through ${idp.issuer.replace(/[.]/g, '\\.')}`)),
    );
    expect(await page.getByLabel('Client ID').inputValue()).toBe(idp.people.clientId);
    expect(await page.getByLabel('Client secret').inputValue()).toBe('');
    await textOf(page.getByTestId('redirect-uri'), redirectUri);
    expect(await page.content()).not.toContain(idp.people.clientSecret);
    await atBothWidths(page, 'sso-configured');

    // A person of the domain signs in through the provider's own pages: just in time, a viewer.
    const person = await newPage();
    await person.page.goto('/console/sign-in');
    await person.page.getByLabel('Organization').fill(ORG);
    await person.page.getByRole('button', { name: 'Sign in with single sign-on' }).click();
    await person.page.waitForURL((url) => url.href.startsWith(idp.issuer));
    await person.page.locator('input[name="login"]').fill('sam@people.test');
    await person.page.locator('input[name="password"]').fill('any password');
    await person.page.getByRole('button', { name: 'Sign-in' }).click();
    await person.page.getByRole('button', { name: 'Continue' }).click();
    await person.page.getByRole('heading', { name: 'My API keys' }).waitFor();
    await visible(person.page.getByText(`${ORG} · viewer`));
    await person.context.close();
  });

  it('offers the key allowlist policy in the settings', async () => {
    const page = admin.page;
    await page.getByRole('link', { name: 'Settings' }).click();
    const policy = page.getByLabel('Require an allowlist on new keys');
    expect(await policy.isChecked()).toBe(false);
    await policy.check();
    await page.getByRole('button', { name: 'Save settings' }).click();
    await visible(page.getByText('Settings saved.'));
    await visible(page.getByText(/New keys must name the addresses they are used from\./));
    await atBothWidths(page, 'settings-allowlist-policy');
    await page.reload();
    expect(await page.getByLabel('Require an allowlist on new keys').isChecked()).toBe(true);
    // The create form follows it: an allowlist is asked for.
    await page.getByRole('link', { name: 'My keys' }).click();
    await page.getByRole('button', { name: 'Create key' }).click();
    await visible(page.getByText('Your organization requires a list, without /0.'));
    expect(await page.getByLabel('Allowed addresses').getAttribute('required')).not.toBeNull();
    await page.getByRole('button', { name: 'Cancel' }).click();
  });
});
