import { join } from 'node:path';
import axe from 'axe-core';
import { Browser, chromium, Locator, Page } from 'playwright-core';
import { ARTIFACTS, ConsoleServer } from './console-server';

/**
 * Usage over time in the console (docs/console.md#pages): a key's page draws its successful and refused uses as bars
 * (inline SVG), a bar's counts shown on hover; the organization's busiest keys for admins, a chart of any of them. A
 * day of history is written into the tables as the counter would have; the last minute's uses are real exchanges.
 * Screenshots at 1280 and 390 px in test-artifacts/console/.
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

const textOf = (locator: Locator, text: string | RegExp): Promise<void> =>
  until(async () => {
    const actual = ((await locator.first().textContent()) ?? '').replace(/\s+/g, ' ').trim();
    if (typeof text === 'string') expect(actual).toBe(text);
    else expect(actual).toMatch(text);
  });

const ORG = 'usage-console';
const OWNER = 'owner@usage.test';
const WIDE = { width: 1280, height: 900 };
const NARROW = { width: 390, height: 844 };
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
  let server: ConsoleServer;
  let browser: Browser;
  let page: Page;
  let key: { id: string; value: string };
  let quiet: { id: string };
  let seeded: { succeeded: number; refused: number };

  async function screenshot(name: string): Promise<void> {
    const viewport = page.viewportSize();
    await page.screenshot({ path: join(ARTIFACTS, `${name}-${viewport?.width ?? 0}.png`), fullPage: true });
  }

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
    server = await ConsoleServer.start({ API_KEY_LAST_USED_FLUSH_MS: '100' });
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

    browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--no-sandbox'] });
    const context = await browser.newContext({ viewport: WIDE, baseURL: server.baseUrl });
    page = await context.newPage();
    await page.goto(await server.signInLink(ORG, OWNER));
    await page.getByRole('heading', { name: 'My API keys' }).waitFor();
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await server?.stop();
  });

  it("draws a key's successful and refused uses on its page; a bar's counts on hover", async () => {
    // Three exchanges now, early enough in a minute for the page to show them in it.
    await until(() => Promise.resolve(expect(new Date().getSeconds()).toBeLessThan(30)), 40_000);
    for (let n = 0; n < 3; n += 1) expect(await exchange(key.value)).toBe(200);

    await page.getByRole('link', { name: 'deploy-bot' }).click();
    await page.getByRole('heading', { name: /^Key “deploy-bot”/ }).waitFor();
    const chart = page.getByRole('img', { name: /^Key “deploy-bot”/ });
    const bars = () => chart.evaluate((svg) => Number(svg.getAttribute('viewBox')!.split(' ')[2]));

    // The last hour by the minute: pointing at the current minute's bar shows its three exchanges.
    await page.getByText('Last hour', { exact: true }).click();
    await until(async () => expect(await bars()).toBeGreaterThanOrEqual(60));
    const box = (await chart.boundingBox())!;
    const minutes = await bars();
    await page.mouse.move(box.x + ((minutes - 0.5) / minutes) * box.width, box.y + box.height / 2);
    await textOf(
      page.getByTestId('usage-readout'),
      /\(minute\) 3 successful · 0 refused Key exchange \(POST \/v1\/token\): 3 successful, 0 refused$/,
    );
    await screenshot('usage-key-hour');

    // The last 24 hours by the hour: the day written and this minute's three.
    await page.getByText('Last 24 hours', { exact: true }).click();
    await until(async () => expect(await bars()).toBe(25));
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
    await expectAccessible();
    await screenshot('usage-key-day');

    await page.setViewportSize(NARROW);
    await page.mouse.move(0, 0);
    await screenshot('usage-key-day');
    await page.getByText('Last 30 days', { exact: true }).click();
    await until(async () => expect(await bars()).toBe(31));
    await expectAccessible();
    await screenshot('usage-key-month');
    await page.setViewportSize(WIDE);
  });

  it('lists the busiest keys of the organization, and charts any of them', async () => {
    expect(await exchange(key.value)).toBe(200);
    await page.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: 'Usage' }).click();
    await page.getByRole('heading', { name: 'Usage', level: 1 }).waitFor();
    const rows = page.locator('table.busiest tbody tr');
    await until(async () => expect(await rows.count()).toBe(1));
    await textOf(rows.first().locator('th'), /^API key “deploy-bot”/);
    await textOf(rows.first().locator('td[data-label="Owner"]'), OWNER);
    // The other key, never used: not among them.
    expect(await page.locator(`tr[data-credential-id="${quiet.id}"]`).count()).toBe(0);

    await page.getByRole('button', { name: 'Chart of API key “deploy-bot”' }).click();
    await page.getByRole('heading', { name: 'Usage of API key “deploy-bot”' }).waitFor();
    await page.getByRole('img', { name: /^API key “deploy-bot”/ }).waitFor();
    await expectAccessible();
    await screenshot('usage-organization');
    await page.setViewportSize(NARROW);
    await screenshot('usage-organization');
    await page.setViewportSize(WIDE);
  });
});
