import type { Page } from 'playwright-core';
import { untilPasses } from '../support/wait';
import { atBothWidths, ConsoleBrowser, countOf, expectAccessible, visible } from './console-browser';
import type { ConsoleServer } from './console-server';
import { type ReceivedDelivery, WebhookReceiver } from './webhook-receiver';

/**
 * The console's Webhooks page (docs/webhooks.md) in headless Chromium against the built server: an admin adds an
 * endpoint for a receiver on loopback (allowed outside production), sees its secret once, sends a test event, reads
 * its delivery in the log, and deletes the endpoint; an endpoint disabled after failing shows as disabled and is enabled
 * again with a click.
 */

describe('console webhooks page in Chromium', () => {
  let suite: ConsoleBrowser;
  let server: ConsoleServer;
  let receiver: WebhookReceiver;
  let receiverUrl: string;
  let received: ReceivedDelivery[];
  /** While set, the receiver answers 500. */
  let failing = false;
  let page: Page;

  const ORG = 'acme';
  const ADMIN = 'admin@example.com';

  beforeAll(async () => {
    receiver = await WebhookReceiver.start(() => ({ status: failing ? 500 : 204 }));
    ({ url: receiverUrl, received } = receiver);
    // One failed attempt disables an endpoint: the second test needs no more.
    suite = await ConsoleBrowser.start({ WEBHOOK_POLL_INTERVAL_MS: '200', WEBHOOK_DISABLE_AFTER_FAILURES: '1' });
    server = suite.server;
    await server.member(ORG, ADMIN, 'admin');
    page = await suite.signedIn(ORG, ADMIN);
  }, 120_000);

  afterAll(async () => {
    await suite?.stop();
    await receiver?.close();
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
    await expectAccessible(page);
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
    await atBothWidths(page, 'webhook-secret');
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
    await untilPasses(() => Promise.resolve(expect(received.length).toBe(1)));
    expect(JSON.parse(received[0].body)).toMatchObject({ type: 'webhook.test' });
    expect(received[0].headers['webhook-signature']).toMatch(/^v1,/);
    const delivery = page.getByTestId('delivery');
    await untilPasses(async () => {
      await page.getByRole('button', { name: 'Refresh deliveries' }).click();
      const cells = await delivery.first().locator('th, td').allTextContents();
      expect(cells.slice(0, 4)).toEqual(['webhook.test', 'succeeded', '1', 'HTTP 204']);
    });
    await atBothWidths(page, 'webhook-deliveries');

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
    await untilPasses(() => Promise.resolve(expect(received.length).toBe(1)));
    await untilPasses(async () => {
      await page.reload();
      expect(await row.first().getByRole('cell').nth(1).textContent()).toMatch(/^Disabled since /);
    });
    await countOf(page.getByRole('button', { name: `Send test to ${receiverUrl}` }), 0);
    await atBothWidths(page, 'webhook-disabled');

    failing = false;
    await page.getByRole('button', { name: `Enable ${receiverUrl}` }).click();
    await visible(page.getByText(`Webhook ${receiverUrl} enabled. The events that waited are sent now.`));
    await untilPasses(async () => expect(await row.first().getByRole('cell').nth(1).textContent()).toBe('Active'));
    await visible(page.getByRole('button', { name: `Send test to ${receiverUrl}` }));
    // The test event that waited comes again, and is answered 204.
    await untilPasses(() => Promise.resolve(expect(received.length).toBe(2)));
    expect(JSON.parse(received[1].body)).toMatchObject({ type: 'webhook.test' });
  });
});
