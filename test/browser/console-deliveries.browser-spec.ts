import { readFileSync } from 'node:fs';
import type { Page } from 'playwright-core';
import { Webhook } from 'standardwebhooks';
import { untilPasses } from '../support/wait';
import {
  atBothWidths,
  ConsoleBrowser,
  countOf,
  expectAccessible,
  NARROW,
  screenshot,
  visible,
  WIDE,
} from './console-browser';
import type { ConsoleServer } from './console-server';
import { type ReceivedDelivery, type ReceiverAnswer, WebhookReceiver } from './webhook-receiver';

/**
 * Webhook deliveries and the audit log in headless Chromium against the built server (docs/webhooks.md,
 * docs/console.md): a delivery's row opens to show the body sent and the receiver's answer, "Refresh deliveries" reads
 * the log again, "Resend" sends the event again; "Rotate secret" shows the new secret once and the receiver gets two
 * signatures, each verified by the standardwebhooks library; the audit log keeps its filters in the address (reload,
 * back and forward), exports them as CSV and JSON, shows what api_key.updated changed, and never breaks an e-mail
 * address inside a word. Screenshots at 1280 and 390 px go to test-artifacts/console/.
 */

describe('console webhook deliveries, secret rotation and the audit log in Chromium', () => {
  let suite: ConsoleBrowser;
  let server: ConsoleServer;
  let receiver: WebhookReceiver;
  let receiverUrl: string;
  let received: ReceivedDelivery[];
  /** The receiver's next answers, in order; then 204. */
  const answers: ReceiverAnswer[] = [];
  let page: Page;
  let token: string;

  const ORG = 'deliveries';
  // Long enough to need two lines at 390 px: it may break before its @ and dots only.
  const ADMIN = 'firstname.middlename.lastname@engineering.example-corporation.test';

  async function call(method: string, path: string, body?: object): Promise<Record<string, unknown>> {
    const response = await fetch(`${server.baseUrl}${path}`, {
      method,
      headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    expect(response.ok).toBe(true);
    return (await response.json()) as Record<string, unknown>;
  }

  beforeAll(async () => {
    receiver = await WebhookReceiver.start(() => answers.shift() ?? { status: 204 });
    ({ url: receiverUrl, received } = receiver);
    // The metrics listener on a free port: another server on this machine may hold the default one.
    suite = await ConsoleBrowser.start({ WEBHOOK_POLL_INTERVAL_MS: '200', METRICS_PORT: '0' });
    server = suite.server;
    await server.member(ORG, ADMIN, 'admin');
    token = String((await server.cli('session', '--email', ADMIN, '--org', ORG)).session_token);
    ({ page } = await suite.newPage({ acceptDownloads: true }));
    await suite.signIn(page, ORG, ADMIN);
  }, 120_000);

  afterAll(async () => {
    await suite?.stop();
    await receiver?.close();
  });

  let secret = '';

  it("opens a delivery: the body sent and the receiver's answer; refreshes; resends it", async () => {
    await page.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: 'Webhooks' }).click();
    await page.getByRole('button', { name: 'Add webhook' }).click();
    await page.getByLabel('Endpoint URL').fill(receiverUrl);
    await page.getByRole('checkbox', { name: /api_key\.created/ }).check();
    await page.getByRole('button', { name: 'Create webhook' }).click();
    secret = (await page.getByTestId('new-secret').textContent()) ?? '';
    await page.getByRole('button', { name: 'Done, I have stored it' }).click();

    // The receiver refuses the test event with a body that says why.
    answers.push({ status: 422, body: '{"error":"unknown event type webhook.test"}' });
    await page.getByRole('button', { name: `Send test to ${receiverUrl}` }).click();
    await untilPasses(() => Promise.resolve(expect(received.length).toBe(1)));
    const rows = page.getByTestId('delivery');
    await untilPasses(async () => {
      await page.getByRole('button', { name: 'Refresh deliveries' }).click();
      expect(await rows.first().locator('td[data-label="Last response"]').textContent()).toBe('HTTP 422');
    });

    // Opened: what was sent (the body the receiver got) and what came back.
    const details = rows.first().getByRole('button', { name: /^Details of the webhook\.test delivery/ });
    expect(await details.getAttribute('aria-expanded')).toBe('false');
    await details.click();
    const opened = page.getByTestId('delivery-detail');
    await visible(opened);
    expect(
      await rows
        .first()
        .getByRole('button', { name: /^Hide details/ })
        .getAttribute('aria-expanded'),
    ).toBe('true');
    const payload = JSON.parse((await opened.getByTestId('delivery-payload').textContent()) ?? '');
    expect(payload).toEqual(JSON.parse(received[0].body));
    const response = (await opened.getByTestId('delivery-response').textContent()) ?? '';
    expect(response).toContain('HTTP 422');
    expect(response).toContain('x-request-id');
    expect(response).toContain('rcv-1');
    expect(await opened.getByTestId('delivery-response-body').textContent()).toBe(
      '{"error":"unknown event type webhook.test"}',
    );
    expect(await page.content()).not.toContain(secret);
    await atBothWidths(page, 'webhook-delivery-open');

    // Resent: a new delivery of the same event (same webhook-id), answered 204 this time.
    await opened.getByRole('button', { name: 'Resend webhook.test event' }).click();
    await visible(page.getByText('The webhook.test event is sent again: a new delivery, at the top of the log.'));
    // (The first delivery's own retry may come too: the same event either way.)
    await untilPasses(() => Promise.resolve(expect(received.length).toBeGreaterThanOrEqual(2)));
    for (const again of received.slice(1)) {
      expect(again.headers['webhook-id']).toBe(received[0].headers['webhook-id']);
      expect(again.body).toBe(received[0].body);
    }
    await untilPasses(async () => {
      await page.getByRole('button', { name: 'Refresh deliveries' }).click();
      const first = await rows.first().locator('th, td').allTextContents();
      expect(first.slice(0, 4)).toEqual(['webhook.testresent', 'succeeded', '1', 'HTTP 204']);
    });
    await countOf(rows, 2);
    await rows
      .first()
      .getByRole('button', { name: /^Details of the webhook\.test delivery/ })
      .click();
    await untilPasses(async () => {
      const texts = await page.getByTestId('delivery-detail').allTextContents();
      expect(texts.some((text) => text.includes('Resends') && text.includes('HTTP 204'))).toBe(true);
    });
    await atBothWidths(page, 'webhook-delivery-resent');
  });

  it('rotates the secret: the new one shown once, both signing until the overlap ends', async () => {
    await page.getByRole('button', { name: `Rotate secret of ${receiverUrl}` }).click();
    const dialog = page.getByRole('dialog', { name: `Rotate the signing secret of ${receiverUrl}?` });
    await visible(dialog);
    expect(await dialog.getByLabel(/^Overlap/).inputValue()).toBe('86400');
    await expectAccessible(page);
    await dialog.getByRole('button', { name: 'Rotate secret' }).click();
    await visible(page.getByRole('heading', { name: `New signing secret of ${receiverUrl}` }));
    const fresh = (await page.getByTestId('new-secret').textContent()) ?? '';
    expect(fresh).toMatch(/^whsec_/);
    expect(fresh).not.toBe(secret);
    expect(await page.locator('.secret-panel').textContent()).toMatch(/is signed with the old and the new secret/);
    await atBothWidths(page, 'webhook-secret-rotated');
    await page.getByRole('button', { name: 'Done, I have stored it' }).click();
    await countOf(page.getByTestId('new-secret'), 0);
    expect(await page.content()).not.toContain(fresh);
    await visible(page.getByTestId('secret-overlap'));
    expect(await page.getByTestId('secret-overlap').textContent()).toMatch(/^Old secret signs too until /);
    await page.reload();
    await visible(page.getByTestId('webhook'));
    expect(await page.content()).not.toContain(fresh);

    // An event now carries two signatures: a receiver on either secret accepts it.
    const from = received.length;
    await call('POST', '/v1/user-api-keys', { label: 'after the rotation' });
    await untilPasses(() => Promise.resolve(expect(received.length).toBe(from + 1)));
    const request = received[from];
    expect(String(request.headers['webhook-signature']).split(' ')).toHaveLength(2);
    const headers = request.headers as Record<string, string>;
    expect(new Webhook(secret).verify(request.body, headers)).toMatchObject({ type: 'api_key.created' });
    expect(new Webhook(fresh).verify(request.body, headers)).toMatchObject({ type: 'api_key.created' });
    await expectAccessible(page);
  });

  it('keeps the audit filters in the address: reload, back and forward show the same list', async () => {
    const key = await call('POST', '/v1/user-api-keys', { label: 'before' });
    const id = (key.api_key as { id: string }).id;
    await call('PATCH', `/v1/user-api-keys/${id}`, { label: 'after', rate_limit: { requests: 5, window_seconds: 60 } });

    await page.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: 'Audit log' }).click();
    await page.waitForURL('**/console/audit');
    await visible(page.getByRole('row', { name: /webhook\.secret_rotated/ }));
    await page.getByLabel('Action').selectOption('api_key.updated');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await page.waitForURL('**/console/audit?action=api_key.updated');
    const updated = page.getByRole('row', { name: /api_key\.updated/ });
    await countOf(updated, 1);
    const changes = (await updated.getByRole('list', { name: 'Changes' }).textContent()) ?? '';
    expect(changes).toContain('label: “before” → “after”');
    expect(changes).toContain('rate_limit: none → 5 per 60 s');
    await countOf(page.getByRole('row', { name: /webhook\.secret_rotated/ }), 0);

    // Reloaded: the same filter, in the form and the list.
    await page.reload();
    await countOf(page.getByRole('row', { name: /api_key\.updated/ }), 1);
    expect(await page.getByLabel('Action').inputValue()).toBe('api_key.updated');

    // Another filter, then back and forward.
    await page.getByLabel('Action').selectOption('webhook.secret_rotated');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await page.waitForURL('**/console/audit?action=webhook.secret_rotated');
    const rotated = page.getByRole('row', { name: /webhook\.secret_rotated/ });
    await countOf(rotated, 1);
    expect(await rotated.getByRole('list', { name: 'Changes' }).textContent()).toMatch(
      /^previous_secret_expires_at: none → /,
    );
    await page.goBack();
    await page.waitForURL('**/console/audit?action=api_key.updated');
    await countOf(page.getByRole('row', { name: /api_key\.updated/ }), 1);
    await countOf(page.getByRole('row', { name: /webhook\.secret_rotated/ }), 0);
    expect(await page.getByLabel('Action').inputValue()).toBe('api_key.updated');
    await page.goForward();
    await page.waitForURL('**/console/audit?action=webhook.secret_rotated');
    await countOf(page.getByRole('row', { name: /webhook\.secret_rotated/ }), 1);
    expect(await page.getByLabel('Action').inputValue()).toBe('webhook.secret_rotated');
    await page.goBack();
    await page.goBack();
    await page.waitForURL('**/console/audit');
    expect(await page.getByLabel('Action').inputValue()).toBe('');
    await visible(page.getByRole('row', { name: /webhook\.secret_rotated/ }));

    // The actor by e-mail in the address too.
    await page.getByLabel(/^Actor/).fill(ADMIN.toUpperCase());
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await untilPasses(() =>
      Promise.resolve(expect(new URL(page.url()).searchParams.get('actor_email')).toBe(ADMIN.toUpperCase())),
    );
    await page.reload();
    expect(await page.getByLabel(/^Actor/).inputValue()).toBe(ADMIN.toUpperCase());
    await visible(page.getByRole('row', { name: /api_key\.updated/ }));
    await expectAccessible(page);
  });

  it('exports the filtered events as CSV and JSON downloads', async () => {
    await page.goto('/console/audit?action=api_key.updated');
    await countOf(page.getByRole('row', { name: /api_key\.updated/ }), 1);
    const [csv] = await Promise.all([
      page.waitForEvent('download'),
      page.getByRole('button', { name: 'Export CSV' }).click(),
    ]);
    expect(csv.suggestedFilename()).toMatch(/^audit-events_\d{4}-\d{2}-\d{2}_\d{4}-\d{2}-\d{2}\.csv$/);
    const text = readFileSync(await csv.path(), 'utf8');
    const lines = text.trimEnd().split('\r\n');
    expect(lines[0]).toMatch(/^id,occurred_at,action,/);
    expect(lines).toHaveLength(2);
    expect(lines[1]).toContain(',api_key.updated,');
    expect(lines[1]).toContain(ADMIN);
    const [json] = await Promise.all([
      page.waitForEvent('download'),
      page.getByRole('button', { name: 'Export JSON' }).click(),
    ]);
    expect(json.suggestedFilename()).toMatch(/\.json$/);
    const events = JSON.parse(readFileSync(await json.path(), 'utf8')) as Array<Record<string, unknown>>;
    expect(events.map((event) => event.action)).toEqual(['api_key.updated']);
    expect(events[0].changes).toMatchObject({ label: { before: 'before', after: 'after' } });
    await countOf(page.getByRole('alert'), 0);

    // A range longer than an export covers: said in words, nothing downloaded.
    await page.getByLabel('Since').fill('2026-01-01T00:00');
    await page.getByLabel('Until').fill('2026-03-01T00:00');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await untilPasses(() => Promise.resolve(expect(new URL(page.url()).searchParams.get('since')).not.toBeNull()));
    await page.getByRole('button', { name: 'Export CSV' }).click();
    await visible(page.getByRole('alert'));
    expect(await page.getByRole('alert').textContent()).toMatch(/31 days/);
  });

  it("shows the actor's e-mail without breaking a word, at 1280 and 390 px", async () => {
    await page.goto('/console/audit?action=api_key.updated');
    const row = page.getByRole('row', { name: /api_key\.updated/ });
    await countOf(row, 1);
    for (const viewport of [NARROW, WIDE]) {
      await page.setViewportSize(viewport);
      const email = row.locator('td[data-label="Actor"]').getByTestId('email');
      expect(await email.textContent()).toBe(ADMIN);
      // Each word of the address is on one line (the address may break only before its @ and dots).
      const lines = await email
        .locator('.email-part')
        .evaluateAll((parts) => parts.map((part) => part.getClientRects().length));
      expect(lines.every((count) => count === 1)).toBe(true);
      if (viewport === NARROW) {
        // And it did need more than one line there: the test would catch a break inside a word.
        const tops = await email
          .locator('.email-part')
          .evaluateAll((parts) => new Set(parts.map((part) => Math.round(part.getBoundingClientRect().top))).size);
        expect(tops).toBeGreaterThan(1);
      }
      await screenshot(page, 'audit-log-changes');
    }
    await expectAccessible(page);
  });
});
