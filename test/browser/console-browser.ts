import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import axe from 'axe-core';
import { Browser, BrowserContext, BrowserContextOptions, chromium, Locator, Page } from 'playwright-core';
import type { Environment } from '../../src/config/configuration';
import { untilPasses, WaitOptions } from '../support/wait';
import { ARTIFACTS, ConsoleServer } from './console-server';

/**
 * What every browser spec shares (docs/console.md#tests): the built server and Debian's Chromium started together, a
 * page of a new browser context, a sign-in, the assertions that wait for the page to catch up, screenshots and the
 * checks of a page at both widths.
 */

export const WIDE = { width: 1280, height: 900 };
export const NARROW = { width: 390, height: 844 };

/** Where screenshots go: test-artifacts/console/, or CONSOLE_SCREENSHOTS (e.g. /tmp/shots) to look at them. */
export const SCREENSHOTS = process.env.CONSOLE_SCREENSHOTS ?? ARTIFACTS;

/** The built server on a database of its own, and a headless Chromium: one of each for a spec file. */
export class ConsoleBrowser {
  private constructor(
    readonly server: ConsoleServer,
    readonly browser: Browser,
  ) {}

  static async start(env: Environment = {}): Promise<ConsoleBrowser> {
    mkdirSync(SCREENSHOTS, { recursive: true });
    const server = await ConsoleServer.start(env);
    try {
      const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--no-sandbox'] });
      return new ConsoleBrowser(server, browser);
    } catch (error) {
      await server.stop();
      throw error;
    }
  }

  /** A page in a browser context of its own (its own storage: another person, or the same one elsewhere). */
  async newPage(options: BrowserContextOptions & { clipboard?: boolean } = {}): Promise<{
    context: BrowserContext;
    page: Page;
  }> {
    const { clipboard = false, ...rest } = options;
    const context = await this.browser.newContext({ viewport: WIDE, baseURL: this.server.baseUrl, ...rest });
    if (clipboard)
      await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: this.server.baseUrl });
    return { context, page: await context.newPage() };
  }

  /** Signs `email` of `org` in on `page` through a new one-time link: the console's first page, "My API keys". */
  async signIn(page: Page, org: string, email: string): Promise<void> {
    await page.goto(await this.server.signInLink(org, email));
    await page.getByRole('heading', { name: 'My API keys' }).waitFor();
  }

  /** A new page, signed in as `email` of `org`. */
  async signedIn(org: string, email: string, options: BrowserContextOptions = {}): Promise<Page> {
    const { page } = await this.newPage(options);
    await this.signIn(page, org, email);
    return page;
  }

  async stop(): Promise<void> {
    await this.browser.close();
    await this.server.stop();
  }
}

/** The text of the locator's first element, its white space collapsed: what a person reads. */
async function textOfFirst(locator: Locator): Promise<string> {
  return ((await locator.first().textContent()) ?? '').replace(/\s+/g, ' ').trim();
}

export const visible = (locator: Locator): Promise<void> => locator.first().waitFor({ state: 'visible' });

export const countOf = (locator: Locator, count: number, options?: WaitOptions): Promise<void> =>
  untilPasses(async () => expect(await locator.count()).toBe(count), options);

/** The first element's text is `text` (or matches it), once the page has caught up. */
export const textOf = (locator: Locator, text: string | RegExp, options?: WaitOptions): Promise<void> =>
  untilPasses(async () => {
    const actual = await textOfFirst(locator);
    if (typeof text === 'string') expect(actual).toBe(text);
    else expect(actual).toMatch(text);
  }, options);

export const containsText = (locator: Locator, text: string, options?: WaitOptions): Promise<void> =>
  untilPasses(async () => expect((await locator.first().textContent()) ?? '').toContain(text), options);

export const valueOf = (locator: Locator, value: string): Promise<void> =>
  untilPasses(async () => expect(await locator.inputValue()).toBe(value));

export const focused = (locator: Locator): Promise<void> =>
  untilPasses(async () => expect(await locator.evaluate((element) => element === document.activeElement)).toBe(true));

/** The whole page as it is now, in `<name>-<width>.png`. */
export async function screenshot(page: Page, name: string): Promise<void> {
  const width = page.viewportSize()?.width ?? 0;
  await page.screenshot({ path: join(SCREENSHOTS, `${name}-${width}.png`), fullPage: true });
}

/** No serious or critical axe-core violation on the page as it is now. */
export async function expectAccessible(page: Page): Promise<void> {
  await page.evaluate(axe.source);
  const result = await page.evaluate(() =>
    (window as unknown as { axe: typeof axe }).axe.run(document, { resultTypes: ['violations'] }),
  );
  const serious = result.violations
    .filter((violation) => violation.impact === 'serious' || violation.impact === 'critical')
    .map((violation) => `${violation.id}: ${violation.nodes.map((node) => node.target.join(' ')).join(', ')}`);
  expect(serious).toEqual([]);
}

/** How far the page reaches past the window's right edge (0: no sideways scrolling). */
export function overflowOf(page: Page): Promise<number> {
  return page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
}

/** The innermost elements that reach past the window's right edge, as `tag.class "text…"`: what makes a page overflow. */
function widerThanWindow(page: Page): Promise<string[]> {
  return page.evaluate(() => {
    const wide = [...document.querySelectorAll('body *')].filter(
      (element) => element.getBoundingClientRect().right > window.innerWidth + 0.5,
    );
    return wide
      .filter((element) => !wide.some((other) => other !== element && element.contains(other)))
      .slice(0, 5)
      .map(
        (element) =>
          `${element.tagName.toLowerCase()}.${[...element.classList].join('.')} "${(element.textContent ?? '').trim().slice(0, 40)}"`,
      );
  });
}

/**
 * The page at 1280 px, then at 390 px (tables become cards): nothing wider than the window, a screenshot of each and,
 * unless `accessible` is false, no serious axe-core violation; back at 1280 px.
 */
export async function atBothWidths(page: Page, name: string, { accessible = true } = {}): Promise<void> {
  for (const viewport of [WIDE, NARROW]) {
    await page.setViewportSize(viewport);
    // Shot first: a page that overflows is the one to look at.
    await screenshot(page, name);
    const overflow = await overflowOf(page);
    const wider = overflow > 0 ? await widerThanWindow(page) : [];
    expect({ name, width: viewport.width, overflow, wider }).toEqual({
      name,
      width: viewport.width,
      overflow: 0,
      wider,
    });
    if (accessible) await expectAccessible(page);
  }
  await page.setViewportSize(WIDE);
}
