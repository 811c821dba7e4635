import axe from 'axe-core';
import { Browser, chromium, Locator, Page } from 'playwright-core';
import { ConsoleServer } from './console-server';

/**
 * A key's allowlist and rate limit in the console (docs/console.md, docs/api.md#allowlists-and-rate-limits): set in the
 * create form, shown and changed in the edit form, a refusal said in words. One server and one browser for the file.
 */
async function until(assertion: () => Promise<void>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      await assertion();
      return;
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await new Promise((ok) => setTimeout(ok, 100));
    }
  }
}

const valueOf = (locator: Locator, value: string): Promise<void> =>
  until(async () => expect(await locator.inputValue()).toBe(value));
const textOf = (locator: Locator, text: string): Promise<void> =>
  until(async () => expect(((await locator.first().textContent()) ?? '').trim()).toBe(text));

describe('web console: key allowlists and rate limits', () => {
  let server: ConsoleServer;
  let browser: Browser;
  let page: Page;

  beforeAll(async () => {
    server = await ConsoleServer.start({});
    await server.member('policies', 'owner@example.com', 'admin');
    browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--no-sandbox'] });
    const context = await browser.newContext({ baseURL: server.baseUrl });
    page = await context.newPage();
    await page.goto(await server.signInLink('policies', 'owner@example.com'));
    await page.getByRole('heading', { name: 'My API keys' }).waitFor();
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await server?.stop();
  });

  it('creates a key with an allowlist and a rate limit, shows them as stored, and changes them', async () => {
    await page.getByRole('button', { name: 'Create key' }).click();
    await page.getByLabel('Label').fill('office only');
    await page.getByLabel('Allowed addresses').fill('203.0.113.0/24\n2001:DB8::1');
    await page.getByLabel('Requests').fill('100');
    await page.getByLabel('per seconds').fill('60');
    await page.getByRole('button', { name: 'Create key' }).click();
    await page.getByRole('button', { name: 'Done, I have stored it' }).click();

    await page.getByRole('button', { name: /^Edit “office only”/ }).click();
    const form = page.getByRole('form', { name: /^Edit “office only”/ });
    // As the server stores them: normalized.
    await valueOf(form.getByLabel('Allowed addresses'), '203.0.113.0/24\n2001:db8::1/128');
    await valueOf(form.getByLabel('Requests'), '100');
    await valueOf(form.getByLabel('per seconds'), '60');
    await page.evaluate(axe.source);
    const violations = await page.evaluate(() =>
      (window as unknown as { axe: typeof axe }).axe.run(document, { resultTypes: ['violations'] }),
    );
    expect(violations.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical')).toEqual([]);

    // A malformed entry: refused in words, nothing changed.
    await form.getByLabel('Allowed addresses').fill('10.0.0.300/8');
    await form.getByRole('button', { name: 'Save changes' }).click();
    await textOf(form.getByRole('alert'), 'Allowed_cidrs: "10.0.0.300/8" is not an IPv4 or IPv6 CIDR or address.');

    await form.getByLabel('Allowed addresses').fill('10.0.0.0/8');
    await form.getByLabel('Requests').fill('');
    await form.getByRole('button', { name: 'Save changes' }).click();
    await until(async () => expect(await page.getByText(/^Key “office only” \(.*\) saved\.$/).count()).toBe(1));
    await page.getByRole('button', { name: /^Edit “office only”/ }).click();
    const again = page.getByRole('form', { name: /^Edit “office only”/ });
    await valueOf(again.getByLabel('Allowed addresses'), '10.0.0.0/8');
    await valueOf(again.getByLabel('Requests'), '');
    await again.getByRole('button', { name: 'Cancel' }).click();
  });
});
