import type { Page } from 'playwright-core';
import { untilPasses } from '../support/wait';
import { atBothWidths, ConsoleBrowser, expectAccessible, NARROW, textOf, valueOf, WIDE } from './console-browser';

/**
 * A key's allowlist and rate limit in the console (docs/console.md, docs/api.md#allowlists-and-rate-limits): set in the
 * create form, shown in the key lists (the member's and the organization's) and in the edit form, changed there, a
 * refusal said in words; a revoked key says when. One server and one browser for the file; screenshots at 1280 and
 * 390 px go to test-artifacts/console/.
 */

describe('web console: key allowlists and rate limits', () => {
  let suite: ConsoleBrowser;
  let page: Page;

  beforeAll(async () => {
    suite = await ConsoleBrowser.start();
    await suite.server.member('policies', 'owner@example.com', 'admin');
    page = await suite.signedIn('policies', 'owner@example.com');
  }, 120_000);

  afterAll(() => suite?.stop());

  it('creates a key with an allowlist and a rate limit, shows them as stored, and changes them', async () => {
    await page.getByRole('button', { name: 'Create key' }).click();
    await page.getByLabel('Label').fill('office only');
    await page.getByLabel('Allowed addresses').fill('203.0.113.0/24\n2001:DB8::1');
    await page.getByLabel('Requests').fill('100');
    // The window's unit says second or seconds as the number is one or not.
    const unit = page.getByTestId('window-unit');
    await page.getByLabel('per (window in seconds)').fill('1');
    await textOf(unit, 'second');
    await page.getByLabel('per (window in seconds)').fill('60');
    await textOf(unit, 'seconds');
    await atBothWidths(page, 'key-policies-create');
    await page.getByRole('button', { name: 'Create key' }).click();
    await page.getByRole('button', { name: 'Done, I have stored it' }).click();

    // The list shows both, compactly: the first address and how many more, the limit in words.
    const row = page.locator('tbody tr', { hasText: 'office only' });
    const limits = row.locator('td[data-label="Limits"]');
    await textOf(limits.locator('.detail').nth(0), 'from 203.0.113.0/24 and 1 more');
    expect(await limits.locator('.detail').nth(0).getAttribute('title')).toBe('203.0.113.0/24\n2001:db8::1/128');
    await textOf(limits.locator('.detail').nth(1), '100 requests per minute');

    await page.getByRole('button', { name: /^Edit “office only”/ }).click();
    const form = page.getByRole('form', { name: /^Edit “office only”/ });
    // As the server stores them: normalized.
    await valueOf(form.getByLabel('Allowed addresses'), '203.0.113.0/24\n2001:db8::1/128');
    await valueOf(form.getByLabel('Requests'), '100');
    await valueOf(form.getByLabel('per (window in seconds)'), '60');
    await expectAccessible(page);

    // A malformed entry: refused in words, nothing changed.
    await form.getByLabel('Allowed addresses').fill('10.0.0.300/8');
    await form.getByRole('button', { name: 'Save changes' }).click();
    // Named as the form names the field, not as the API does (allowed_cidrs).
    await textOf(form.getByRole('alert'), 'Allowed addresses: "10.0.0.300/8" is not an IPv4 or IPv6 CIDR or address.');

    await form.getByLabel('Allowed addresses').fill('10.0.0.0/8');
    await form.getByLabel('Requests').fill('');
    await form.getByRole('button', { name: 'Save changes' }).click();
    await untilPasses(async () => expect(await page.getByText(/^Key “office only” \(.*\) saved\.$/).count()).toBe(1));
    await page.getByRole('button', { name: /^Edit “office only”/ }).click();
    const again = page.getByRole('form', { name: /^Edit “office only”/ });
    await valueOf(again.getByLabel('Allowed addresses'), '10.0.0.0/8');
    await valueOf(again.getByLabel('Requests'), '');
    await again.getByRole('button', { name: 'Cancel' }).click();
    await textOf(limits.locator('.detail').nth(0), 'from 10.0.0.0/8');
    await textOf(limits.locator('.detail').nth(1), 'no rate limit');
  });

  it("shows every key's allowlist and rate limit in the organization's list too, and any address for a key without", async () => {
    await page.getByRole('button', { name: 'Create key' }).click();
    await page.getByLabel('Label').fill('anywhere');
    await page.getByLabel('Requests').fill('1');
    await page.getByLabel('per (window in seconds)').fill('90');
    await page.getByRole('button', { name: 'Create key' }).click();
    await page.getByRole('button', { name: 'Done, I have stored it' }).click();

    await page.getByRole('link', { name: 'Organization keys' }).click();
    await page.getByRole('heading', { name: 'Organization keys' }).waitFor();
    const anywhere = page.locator('tbody tr', { hasText: 'anywhere' }).locator('td[data-label="Limits"]');
    await textOf(anywhere.locator('.detail').nth(0), 'any address');
    await textOf(anywhere.locator('.detail').nth(1), '1 request per 90 seconds');
    const office = page.locator('tbody tr', { hasText: 'office only' }).locator('td[data-label="Limits"]');
    await textOf(office.locator('.detail').nth(0), 'from 10.0.0.0/8');
    await atBothWidths(page, 'key-policies-organization-keys');
  });

  it('says when a revoked key was revoked, instead of an expiry it no longer reaches', async () => {
    await page.getByRole('link', { name: 'My keys' }).click();
    await page.getByRole('heading', { name: 'My API keys' }).waitFor();
    await page.getByRole('button', { name: /^Revoke “anywhere”/ }).click();
    const revokedAt = Date.now();
    await page.getByRole('button', { name: 'Revoke key' }).click();
    await untilPasses(async () => expect(await page.getByText(/^Key “anywhere” \(.*\) revoked\.$/).count()).toBe(1));
    await page.getByLabel('Show revoked keys').check();
    const row = page.locator('tbody tr', { hasText: 'anywhere' });
    await textOf(row.locator('td[data-label="Status"] .badge'), 'REVOKED');
    const when = row.locator('td[data-label="Status"] .detail time');
    await textOf(row.locator('td[data-label="Status"] .detail').first(), /^revoked .*(UTC|GMT)/);
    expect(Math.abs(Date.parse((await when.getAttribute('datetime'))!) - revokedAt)).toBeLessThan(60_000);
    await textOf(row.locator('td[data-label="Expires"]'), 'no longer applies');
    await atBothWidths(page, 'key-revoked');
    // As a card, a revoked key has no empty "Actions" heading.
    await page.setViewportSize(NARROW);
    expect(await row.locator('td[data-label="Actions"]').isVisible()).toBe(false);
    expect(
      await page.locator('tbody tr', { hasText: 'office only' }).locator('td[data-label="Actions"]').isVisible(),
    ).toBe(true);
    await page.setViewportSize(WIDE);
  });
});
