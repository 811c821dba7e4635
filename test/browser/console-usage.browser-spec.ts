import type { Page } from 'playwright-core';
import { untilPasses } from '../support/wait';
import { atBothWidths, ConsoleBrowser, expectAccessible, NARROW, screenshot, textOf, WIDE } from './console-browser';
import type { ConsoleServer } from './console-server';

/**
 * Usage over time in the console (docs/console.md#pages): a key's page draws its successful and refused uses as bars
 * (inline SVG), a bar's counts shown on hover; the organization's busiest keys for admins, a chart of any of them. A
 * day of history is written into the tables as the counter would have; the last minute's uses are real exchanges.
 * Screenshots at 1280 and 390 px in test-artifacts/console/.
 */

const ORG = 'usage-console';
const OWNER = 'owner@usage.test';
const MINUTE = 60_000;

/**
 * Nearly a day of a service's traffic, minute by minute (23 hours: a new hour while the test runs drops none of it),
 * busier by day, with a burst of refusals in the hour that began two hours before the current one.
 */
function history(nowMs: number): Array<{ minute: number; succeeded: number; refused: number }> {
  const current = Math.floor(nowMs / MINUTE);
  const burst = Math.floor(current / 60) * 60 - 120;
  const rows = [];
  let seed = 7;
  const noise = () => ((seed = (seed * 48271) % 2147483647) % 7) - 3;
  for (let minute = current - 23 * 60; minute < current; minute += 1) {
    const hour = new Date(minute * MINUTE).getUTCHours();
    const succeeded = Math.max(0, Math.round(12 + 9 * Math.sin(((hour - 6) / 24) * 2 * Math.PI)) + noise());
    const refused = minute >= burst && minute < burst + 20 ? 6 + (minute % 3) : Math.max(0, noise() - 1);
    rows.push({ minute, succeeded, refused });
  }
  return rows;
}

describe('web console: usage over time', () => {
  let suite: ConsoleBrowser;
  let server: ConsoleServer;
  let page: Page;
  let key: { id: string; value: string };
  let quiet: { id: string };
  let seeded: { succeeded: number; refused: number };
  let organizationId: string;

  /** POST with the owner's session token (as the admin CLI prints it). */
  async function asOwner(path: string, body: unknown): Promise<Record<string, unknown>> {
    const { session_token: token } = await server.cli('session', '--org', ORG, '--email', OWNER);
    const response = await fetch(`${server.baseUrl}${path}`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${token as string}`, 'Content-Type': 'application/json' },
      body: JSON.stringify(body),
    });
    expect(response.status).toBe(201);
    return (await response.json()) as Record<string, unknown>;
  }

  const exchange = async (value: string): Promise<number> =>
    (await fetch(`${server.baseUrl}/v1/token`, { method: 'POST', headers: { Authorization: `ApiKey ${value}` } }))
      .status;

  beforeAll(async () => {
    // Counts written every 100 ms: the page shows the exchanges below without waiting a second.
    suite = await ConsoleBrowser.start({ API_KEY_LAST_USED_FLUSH_MS: '100', USAGE_FLUSH_MS: '100' });
    server = suite.server;
    await server.member(ORG, OWNER, 'admin');
    const created = await asOwner('/v1/user-api-keys', { label: 'deploy-bot' });
    key = { id: (created.api_key as { id: string }).id, value: created.opaque_key as string };
    quiet = { id: ((await asOwner('/v1/user-api-keys', { label: 'nightly-report' })).api_key as { id: string }).id };

    // A day of history for the key, minute by minute and rolled up by hour, as the counter writes them.
    const rows = history(Date.now());
    seeded = rows.reduce(
      (sum, row) => ({ succeeded: sum.succeeded + row.succeeded, refused: sum.refused + row.refused }),
      {
        succeeded: 0,
        refused: 0,
      },
    );
    const hours = new Map<number, { succeeded: number; refused: number }>();
    for (const row of rows) {
      const hour = Math.floor(row.minute / 60) * 60;
      const sum = hours.get(hour) ?? { succeeded: 0, refused: 0 };
      hours.set(hour, { succeeded: sum.succeeded + row.succeeded, refused: sum.refused + row.refused });
    }
    const org = (created.api_key as { organization_id: string }).organization_id;
    organizationId = org;
    const insert = async (table: string, entries: Array<[number, { succeeded: number; refused: number }]>) => {
      const values = entries.map(() => `(?, ?, 'key_exchange', 'api_key', ?, ?, ?)`).join(', ');
      await server.execute(
        `INSERT INTO ${table} (credential_id, minute, channel, credential_kind, organization_id, succeeded, refused) VALUES ${values}`,
        entries.flatMap(([minute, counts]) => [key.id, minute, org, counts.succeeded, counts.refused]),
      );
    };
    for (let start = 0; start < rows.length; start += 400) {
      await insert(
        'credential_usage_minutes',
        rows.slice(start, start + 400).map((row) => [row.minute, row]),
      );
    }
    await insert('credential_usage_hours', [...hours]);

    page = await suite.signedIn(ORG, OWNER);
  }, 120_000);

  afterAll(() => suite?.stop());

  it("draws a key's successful and refused uses on its page; a bar's counts on hover", async () => {
    // Three exchanges now, early enough in a minute for the page to show them in it.
    await untilPasses(() => Promise.resolve(expect(new Date().getSeconds()).toBeLessThan(30)), {
      timeoutMs: 40_000,
    });
    for (let n = 0; n < 3; n += 1) expect(await exchange(key.value)).toBe(200);

    await page.getByRole('link', { name: 'deploy-bot' }).click();
    await page.getByRole('heading', { name: /^Key “deploy-bot”/ }).waitFor();
    // The chart of every channel; those of each channel are named after it too.
    const chart = page.getByRole('img', { name: /^Key “deploy-bot” \([0-9a-f]{8}…\): / });
    const bars = () => chart.evaluate((svg) => Number(svg.getAttribute('viewBox')!.split(' ')[2]));

    // The last hour by the minute: pointing at the current minute's bar shows its three exchanges.
    await page.getByText('Last hour', { exact: true }).click();
    await untilPasses(async () => expect(await bars()).toBeGreaterThanOrEqual(60));
    const box = (await chart.boundingBox())!;
    const minutes = await bars();
    await page.mouse.move(box.x + ((minutes - 0.5) / minutes) * box.width, box.y + box.height / 2);
    await textOf(
      page.getByTestId('usage-readout'),
      /\(minute\) 3 successful · 0 refused Key exchange \(POST \/v1\/token\): 3 successful, 0 refused$/,
    );
    await screenshot(page, 'usage-key-hour');

    // The last 24 hours by the hour: the day written and this minute's three.
    await page.getByText('Last 24 hours', { exact: true }).click();
    await untilPasses(async () => expect(await bars()).toBe(25));
    const format = new Intl.NumberFormat('en-US');
    await textOf(page.getByTestId('usage-succeeded'), format.format(seeded.succeeded + 3));
    await textOf(page.getByTestId('usage-refused'), format.format(seeded.refused));
    expect(await chart.locator('rect.usage-succeeded').count()).toBeGreaterThanOrEqual(23);
    expect(await chart.locator('rect.usage-refused').count()).toBeGreaterThan(0);
    // From the keyboard: the last bar, then back two hours to the burst of refusals.
    await chart.focus();
    await page.keyboard.press('End');
    await textOf(page.getByTestId('usage-readout'), /\(hour\) [\d,]+ successful · [\d,]+ refused/);
    await page.keyboard.press('ArrowLeft');
    await page.keyboard.press('ArrowLeft');
    await textOf(page.getByTestId('usage-readout'), /\(hour\) [\d,]+ successful · 1\d\d refused/);
    await expectAccessible(page);
    await screenshot(page, 'usage-key-day');

    await page.setViewportSize(NARROW);
    await page.mouse.move(0, 0);
    await screenshot(page, 'usage-key-day');
    await page.getByText('Last 30 days', { exact: true }).click();
    await untilPasses(async () => expect(await bars()).toBe(31));
    await expectAccessible(page);
    await screenshot(page, 'usage-key-month');
    await page.setViewportSize(WIDE);
  });

  it('lists the busiest keys of the organization, and charts any of them', async () => {
    expect(await exchange(key.value)).toBe(200);
    await page.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: 'Usage' }).click();
    await page.getByRole('heading', { name: 'Usage', level: 1 }).waitFor();
    const rows = page.locator('table.busiest tbody tr');
    await untilPasses(async () => expect(await rows.count()).toBe(1));
    await textOf(rows.first().locator('th'), /^API key “deploy-bot”/);
    await textOf(rows.first().locator('td[data-label="Owner"]'), OWNER);
    // The other key, never used: not among them.
    expect(await page.locator(`tr[data-credential-id="${quiet.id}"]`).count()).toBe(0);

    await page.getByRole('button', { name: 'Chart of API key “deploy-bot”' }).click();
    await page.getByRole('heading', { name: 'Usage of API key “deploy-bot”' }).waitFor();
    await page.getByRole('img', { name: /^API key “deploy-bot”/ }).waitFor();
    await expectAccessible(page);
    await screenshot(page, 'usage-organization');
    await page.setViewportSize(NARROW);
    await screenshot(page, 'usage-organization');
    await page.setViewportSize(WIDE);
  });

  it('draws each channel apart once more than one was used: exchanges, forward auth and introspection', async () => {
    // Five minutes ago, the key's tokens at forward auth and at introspection, as the counter writes them.
    const minute = Math.floor(Date.now() / MINUTE) - 5;
    for (const [table, start] of [
      ['credential_usage_minutes', minute],
      ['credential_usage_hours', Math.floor(minute / 60) * 60],
    ] as const) {
      await server.execute(
        `INSERT INTO ${table} (credential_id, minute, channel, credential_kind, organization_id, succeeded, refused)
         VALUES (?, ?, 'forward_auth', 'api_key', ?, 40, 2), (?, ?, 'introspection', 'api_key', ?, 7, 5)`,
        [key.id, start, organizationId, key.id, start, organizationId],
      );
    }
    await page.goto(`/console/keys/${key.id}`);
    await page.getByText('Last 24 hours', { exact: true }).click();
    const channels = page.getByRole('region', { name: 'Per channel' });
    await untilPasses(async () => expect(await channels.getByRole('img').count()).toBe(3));
    const label = (channel: string) =>
      page.getByTestId(`usage-channel-${channel}`).getByRole('img').getAttribute('aria-label');
    expect(await label('key_exchange')).toMatch(
      /^Key “deploy-bot” \([0-9a-f]{8}…\), Key exchange \(POST \/v1\/token\): [\d,]+ successful and [\d,]+ refused uses, per hour$/,
    );
    expect(await label('forward_auth')).toMatch(/, Forward auth: 40 successful and 2 refused uses, per hour$/);
    expect(await label('introspection')).toMatch(/, Introspection: 7 successful and 5 refused uses, per hour$/);
    // Each chart's bars are its channel's alone.
    const forward = page.getByTestId('usage-channel-forward_auth').getByRole('img');
    expect(await forward.locator('rect.usage-succeeded').count()).toBe(1);
    expect(await forward.locator('rect.usage-refused').count()).toBe(1);
    await atBothWidths(page, 'usage-key-channels');
  });
});
