import type { Page } from 'playwright-core';
import { IdentityProvider } from '../support/identity-provider';
import { SplitOriginProvider } from '../support/split-origin-provider';
import { atBothWidths, ConsoleBrowser, containsText, screenshot, valueOf, visible } from './console-browser';
import type { ConsoleServer } from './console-server';
import { buildIdentityProviderWorker } from './identity-provider-build';

/**
 * Console single sign-on (docs/console.md#single-sign-on) in headless Chromium: a person opens the console's sign-in
 * page, asks for single sign-on with their organization's name, signs in on the identity provider's own pages
 * (node-oidc-provider's, in a process of its own) and lands in the console, signed in, against the built server; the
 * one-time link single sign-on ends with does not work in another browser. A refusal (no access, a mistyped
 * organization) is a page in the console's style with a way back, never a raw body. An admin sets up a provider whose
 * endpoints are on a second origin, as Google's are, in the console at once. Screenshots at 1280 and 390 px.
 */
describe('console single sign-on in Chromium', () => {
  const ORG = 'acme';
  const EMAIL = 'dana@acme.test';
  let removeWorker: () => void;
  let suite: ConsoleBrowser;
  let server: ConsoleServer;
  let idp: IdentityProvider;

  beforeAll(async () => {
    removeWorker = await buildIdentityProviderWorker();
    suite = await ConsoleBrowser.start();
    server = suite.server;
    idp = await IdentityProvider.start({ redirectUris: [`${server.baseUrl}/v1/console/sso/callback`] });
    await server.member(ORG, EMAIL, 'member');
    await server.trust(ORG, idp, 'people');
  }, 120_000);

  afterAll(async () => {
    await suite?.stop();
    await IdentityProvider.stopAll();
    removeWorker?.();
  });

  it("signs in through the identity provider's own login page and lands signed in on the console", async () => {
    const { context, page } = await suite.newPage();
    await page.goto(`${server.baseUrl}/console/sign-in`);
    await page.getByLabel('Organization').fill(ORG);
    // The form beside the one-time link's instructions: no serious or critical axe-core violation.
    await atBothWidths(page, 'sso-sign-in');
    await page.getByRole('button', { name: 'Sign in with single sign-on' }).click();

    // The identity provider's pages: its login form (any password), then its consent.
    await page.waitForURL((url) => url.href.startsWith(idp.issuer));
    await page.locator('input[name="login"]').fill(EMAIL);
    await page.locator('input[name="password"]').fill('any password');
    await page.getByRole('button', { name: 'Sign-in' }).click();

    // The console's trade of the one-time link held back a moment: the link, opened in another browser first (someone
    // who sent the link of their own sign-in to a colleague), signs no one in there and stays this browser's.
    let link = '';
    await page.route(`${server.baseUrl}/v1/console/sessions`, async (route) => {
      link = `${server.baseUrl}/console/sign-in#code=${(route.request().postDataJSON() as { code: string }).code}`;
      const other = await suite.browser.newContext();
      const elsewhere = await other.newPage();
      await elsewhere.goto(link);
      await elsewhere.getByRole('alert').getByText('belongs to a single sign-on started in another browser').waitFor();
      await other.close();
      await route.continue();
    });
    await page.getByRole('button', { name: 'Continue' }).click();

    // Back through the callback to the console, which trades the one-time code: signed in, the code gone.
    await page.getByRole('heading', { name: 'My API keys' }).waitFor();
    expect(page.url()).toBe(`${server.baseUrl}/console/keys`);
    expect(((await page.getByRole('banner').getByTestId('signed-in-as').textContent()) ?? '').trim()).toBe(
      `Signed in as ${EMAIL}`,
    );
    expect(link).toMatch(new RegExp(`^${server.baseUrl}/console/sign-in#code=[A-Za-z0-9_-]{43}$`));
    expect((await context.cookies(server.baseUrl)).map((cookie) => cookie.name)).not.toContain('gatehouse_sso');
    await screenshot(page, 'sso-signed-in');

    await context.close();
  });

  /** The page as the console's stylesheet draws it: its sign-in layout, its error message, its primary button. */
  async function expectConsoleStyled(page: Page): Promise<void> {
    const styles = await page.evaluate(() => {
      const style = (selector: string) => getComputedStyle(document.querySelector(selector)!);
      return {
        main: style('main.sign-in').maxWidth,
        font: style('body').fontFamily,
        alert: style('.message-error').backgroundColor,
        button: style('a.button-primary').backgroundColor,
      };
    });
    expect(styles).toEqual({
      main: '640px',
      font: expect.stringContaining('system-ui'),
      alert: 'rgb(253, 236, 234)',
      button: 'rgb(11, 92, 173)',
    });
  }

  it('shows a person who is no member a "no access" page with the address as they typed it, and a way back', async () => {
    const { context, page } = await suite.newPage();
    await page.goto(`${server.baseUrl}/console/sign-in`);
    await page.getByLabel('Organization').fill(ORG);
    await page.getByRole('button', { name: 'Sign in with single sign-on' }).click();
    await page.waitForURL((url) => url.href.startsWith(idp.issuer));
    await page.locator('input[name="login"]').fill('Bob.Stranger@acme.test');
    await page.locator('input[name="password"]').fill('any password');
    await page.getByRole('button', { name: 'Sign-in' }).click();
    await page.getByRole('button', { name: 'Continue' }).click();

    await page.getByRole('heading', { name: 'No access to the console' }).waitFor();
    expect(await page.title()).toBe('No access to the console · Gatehouse');
    expect((await page.getByRole('alert').textContent())?.trim()).toBe(
      'Bob.Stranger@acme.test has no access to the console of acme: ask one of its administrators to add you.',
    );
    await expectConsoleStyled(page);
    await atBothWidths(page, 'sso-no-access');

    await page.getByRole('link', { name: "Back to the console's sign-in page" }).click();
    await page.getByRole('heading', { name: 'Sign in to the Gatehouse console' }).waitFor();
    await context.close();
  });

  it('shows a mistyped organization a page that names it and leads back to the form, never a JSON body', async () => {
    const { context, page } = await suite.newPage();
    await page.goto(`${server.baseUrl}/console/sign-in`);
    await page.getByLabel('Organization').fill('acme-typo');
    await page.getByRole('button', { name: 'Sign in with single sign-on' }).click();

    await page.getByRole('heading', { name: 'Single sign-on is not set up' }).waitFor();
    expect((await page.getByRole('alert').textContent())?.trim()).toBe(
      'Gatehouse has no single sign-on for the organization “acme-typo”. Check its name (an administrator can tell you ' +
        'how Gatehouse spells it), or ask an administrator for a one-time sign-in link.',
    );
    expect(await page.content()).not.toContain('"code"');
    await expectConsoleStyled(page);
    await atBothWidths(page, 'sso-unknown-organization');

    await page.getByRole('link', { name: "Back to the console's sign-in page" }).click();
    await page.getByLabel('Organization').waitFor();
    await context.close();
  });

  it('sets up a provider whose endpoints are on a second origin: the test names it, one click allows it', async () => {
    const google = await SplitOriginProvider.start();
    try {
      await server.member('split-co', 'ada@split.test', 'admin');
      const { context, page } = await suite.newPage();
      await suite.signIn(page, 'split-co', 'ada@split.test');
      await page.goto('/console/organization/single-sign-on');
      await page.getByRole('heading', { name: 'Single sign-on', level: 1 }).waitFor();
      await page.getByLabel('Issuer URL').fill(google.issuer);
      await page.getByRole('button', { name: 'Test the connection' }).click();
      // Refused, naming the origin; allowed with one click, and tested again.
      await containsText(page.getByRole('alert'), `/oauth2/v3/certs of ${google.issuer}/`);
      await containsText(page.getByRole('alert'), `is on ${google.otherOrigin}, not the issuer's origin`);
      const allow = page.getByRole('button', { name: `Allow ${google.otherOrigin} and test again` });
      await atBothWidths(page, 'sso-setup-origin-refused');
      await allow.click();
      await visible(page.getByTestId('discovery').getByText(`${google.otherOrigin}/token`));
      await valueOf(page.getByLabel('Other allowed origins'), google.otherOrigin);
      expect(await page.getByRole('alert').count()).toBe(0);

      await page.getByLabel('Client ID').fill('gatehouse');
      await page.getByLabel('Client secret').fill('google-secret');
      await page.getByRole('button', { name: 'Save single sign-on' }).click();
      await visible(page.getByText(/^Single sign-on saved\./));
      await atBothWidths(page, 'sso-setup-other-origin');
      // Opened again: the origin stored, and the test on opening passes with it.
      await page.reload();
      await valueOf(page.getByLabel('Other allowed origins'), google.otherOrigin);
      await visible(page.getByTestId('discovery'));
      await context.close();
    } finally {
      google.stop();
    }
  });
});
