import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import axe from 'axe-core';
import { Browser, chromium, Locator, Page } from 'playwright-core';
import { ARTIFACTS, ConsoleServer } from './console-server';

/**
 * The console's Webhooks page (docs/webhooks.md) in headless Chromium against the built server: an admin adds an
 * endpoint for a receiver on loopback (allowed outside production), sees its secret once, sends a test event, reads
 * its delivery in the log, and deletes the endpoint; an endpoint disabled after failing shows as disabled and is enabled
 * again with a click.
 */
async function until(assertion: () => Promise<void>, timeoutMs = 15_000): Promise<void> {
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

const visible = (locator: Locator): Promise<void> => locator.first().waitFor({ state: 'visible' });
const countOf = (locator: Locator, count: number): Promise<void> =>
  until(async () => expect(await locator.count()).toBe(count));

describe('console webhooks page in Chromium', () => {
  let server: ConsoleServer;
  let receiver: Server;
  let receiverUrl: string;
  const received: Array<{ headers: IncomingHttpHeaders; body: string }> = [];
  /** While set, the receiver answers 500. */
  let failing = false;
  let browser: Browser;
  let page: Page;

  const ORG = 'acme';
  const ADMIN = 'admin@example.com';

  async function expectAccessible(): Promise<void> {
    await page.evaluate(axe.source);
    const result = await page.evaluate(() =>
      (window as unknown as { axe: typeof axe }).axe.run(document, { resultTypes: ['violations'] }),
    );
    const serious = result.violations
      .filter((violation) => violation.impact === 'serious' || violation.impact === 'critical')
      .map((violation) => `${violation.id}: ${violation.nodes.map((node) => node.target.join(' ')).join(', ')}`);
    expect(serious).toEqual([]);
  }

  beforeAll(async () => {
    receiver = createServer((request, response) => {
      let body = '';
      request.on('data', (chunk: Buffer) => (body += chunk.toString()));
      request.on('end', () => {
        received.push({ headers: request.headers, body });
        response.writeHead(failing ? 500 : 204).end();
      });
    });
    await new Promise<void>((ok) => receiver.listen(0, '127.0.0.1', ok));
    receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`;
    // One failed attempt disables an endpoint: the second test needs no more.
    server = await ConsoleServer.start({ WEBHOOK_POLL_INTERVAL_MS: '200', WEBHOOK_DISABLE_AFTER_FAILURES: '1' });
    await server.member(ORG, ADMIN, 'admin');
    browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--no-sandbox'] });
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, baseURL: server.baseUrl });
    page = await context.newPage();
    await page.goto(await server.signInLink(ORG, ADMIN));
    await page.getByRole('heading', { name: 'My API keys' }).waitFor();
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await server?.stop();
    await new Promise((ok) => receiver?.close(ok));
  });

  it('adds a webhook, shows its secret once, sends a test delivery, shows it in the log, and deletes it', async () => {
    await page.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: 'Webhooks' }).click();
    await page.waitForURL('**/console/organization/webhooks');
    await visible(page.getByRole('heading', { level: 1, name: 'Webhooks' }));
    await visible(page.getByText('No webhooks yet.'));

    await page.getByRole('button', { name: 'Add webhook' }).click();
    await page.getByLabel('Endpoint URL').fill(receiverUrl);
    // No event chosen: said in words, nothing sent.
    await page.getByRole('button', { name: 'Create webhook' }).click();
    await visible(page.getByText('Choose at least one event.'));
    await page.getByRole('checkbox', { name: /api_key\.revoked/ }).check();
    await page.getByRole('checkbox', { name: /member\.removed/ }).check();
    await expectAccessible();
    await page.getByRole('button', { name: 'Create webhook' }).click();

    // The secret, once.
    const secret = (await page.getByTestId('new-secret').textContent()) ?? '';
    expect(secret).toMatch(/^whsec_/);
    await visible(page.getByRole('heading', { name: `Signing secret of ${receiverUrl}` }));
    // Said as what it is: a signing secret kept sealed, not an API key kept as a hash.
    const panel = page.locator('.secret-panel');
    await visible(panel.getByRole('button', { name: 'Copy secret' }));
    expect(await panel.textContent()).toContain('If you lose it, rotate the secret.');
    expect(await panel.textContent()).not.toMatch(/API key|hash/);
    await page.screenshot({ path: join(ARTIFACTS, 'webhook-secret-1280.png'), fullPage: true });
    await expectAccessible();
    await page.getByRole('button', { name: 'Done, I have stored it' }).click();
    await countOf(page.getByTestId('new-secret'), 0);
    expect(await page.content()).not.toContain(secret);

    // Listed, without its secret.
    const row = page.getByTestId('webhook');
    await countOf(row, 1);
    const text = (await row.first().textContent()) ?? '';
    expect(text).toContain(receiverUrl);
    expect(text).toContain('api_key.revoked');
    expect(text).toContain('member.removed');
    expect(text).not.toContain('api_key.created');

    // A test event: delivered to the receiver, and in the log.
    await page.getByRole('button', { name: `Send test to ${receiverUrl}` }).click();
    await visible(page.getByRole('heading', { name: `Deliveries to ${receiverUrl}` }));
    await until(() => Promise.resolve(expect(received.length).toBe(1)));
    expect(JSON.parse(received[0].body)).toMatchObject({ type: 'webhook.test' });
    expect(received[0].headers['webhook-signature']).toMatch(/^v1,/);
    const delivery = page.getByTestId('delivery');
    await until(async () => {
      await page.getByRole('button', { name: 'Refresh deliveries' }).click();
      const cells = await delivery.first().locator('th, td').allTextContents();
      expect(cells.slice(0, 4)).toEqual(['webhook.test', 'succeeded', '1', 'HTTP 204']);
    });
    await page.screenshot({ path: join(ARTIFACTS, 'webhook-deliveries-1280.png'), fullPage: true });
    await expectAccessible();

    // Deleted after confirming.
    await page.getByRole('button', { name: `Delete ${receiverUrl}` }).click();
    const dialog = page.getByRole('dialog', { name: `Delete the webhook ${receiverUrl}?` });
    await visible(dialog);
    await dialog.getByRole('button', { name: 'Delete webhook' }).click();
    await visible(page.getByText(`Webhook ${receiverUrl} deleted.`));
    await countOf(row, 0);
    await visible(page.getByText('No webhooks yet.'));
  });

  it('shows an endpoint disabled after failing, and enables it again: what waited is delivered', async () => {
    received.length = 0;
    failing = true;
    await page.getByRole('button', { name: 'Add webhook' }).click();
    await page.getByLabel('Endpoint URL').fill(receiverUrl);
    await page.getByRole('checkbox', { name: /api_key\.revoked/ }).check();
    await page.getByRole('button', { name: 'Create webhook' }).click();
    await page.getByRole('button', { name: 'Done, I have stored it' }).click();
    const row = page.getByTestId('webhook');
    await countOf(row, 1);
    expect(await row.first().getByRole('cell').nth(1).textContent()).toBe('Active');

    // The test event is answered 500: one failure in a row disables the endpoint here.
    await page.getByRole('button', { name: `Send test to ${receiverUrl}` }).click();
    await until(() => Promise.resolve(expect(received.length).toBe(1)));
    await until(async () => {
      await page.reload();
      expect(await row.first().getByRole('cell').nth(1).textContent()).toMatch(/^Disabled since /);
    });
    await countOf(page.getByRole('button', { name: `Send test to ${receiverUrl}` }), 0);
    await page.screenshot({ path: join(ARTIFACTS, 'webhook-disabled-1280.png'), fullPage: true });
    await expectAccessible();

    failing = false;
    await page.getByRole('button', { name: `Enable ${receiverUrl}` }).click();
    await visible(page.getByText(`Webhook ${receiverUrl} enabled. The events that waited are sent now.`));
    await until(async () => expect(await row.first().getByRole('cell').nth(1).textContent()).toBe('Active'));
    await visible(page.getByRole('button', { name: `Send test to ${receiverUrl}` }));
    // The test event that waited comes again, and is answered 204.
    await until(() => Promise.resolve(expect(received.length).toBe(2)));
    expect(JSON.parse(received[1].body)).toMatchObject({ type: 'webhook.test' });
  });
});
