import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { decodeJwt } from 'jose';
import type { Locator, Page } from 'playwright-core';
import { IdentityProvider } from '../support/identity-provider';
import { atBothWidths, ConsoleBrowser, expectAccessible, textOf } from './console-browser';
import type { ConsoleServer } from './console-server';
import { buildIdentityProviderWorker } from './identity-provider-build';

/**
 * What the console's forms say and do where a new user first met rough edges (docs/console.md): the workload identity
 * page shows the one snippet of the identity's platform, and that snippet works as shown; the webhook form's hint says
 * what this server does with an address on its own machine; integration keys are typed in password fields. Against
 * the built server outside production, with node-oidc-provider as a workloads issuer. Screenshots at 1280 and 390 px go
 * to test-artifacts/console/.
 */
const run = promisify(execFile);

describe('web console forms in Chromium', () => {
  const ORG = 'builders';
  const ADMIN = 'admin@builders.test';
  const AUDIENCE = 'https://gatehouse.builders.test';
  let removeWorker: () => void;
  let suite: ConsoleBrowser;
  let server: ConsoleServer;
  let idp: IdentityProvider;
  let page: Page;

  beforeAll(async () => {
    removeWorker = await buildIdentityProviderWorker();
    suite = await ConsoleBrowser.start();
    server = suite.server;
    idp = await IdentityProvider.start();
    await server.member(ORG, ADMIN, 'admin');
    await server.trust(ORG, idp, 'workloads', AUDIENCE);
    page = await suite.signedIn(ORG, ADMIN);
  }, 120_000);

  afterAll(async () => {
    await suite?.stop();
    await IdentityProvider.stopAll();
    removeWorker?.();
  });

  /** Creates a workload identity of the local issuer with `subject` through the form; its panel is then shown. */
  async function createIdentity(label: string, subject: string): Promise<Locator> {
    await page.getByRole('button', { name: 'Create workload identity' }).click();
    const form = page.getByRole('form', { name: 'New workload identity' });
    await form.getByLabel('Label').fill(label);
    await form.getByLabel('Subject').fill(subject);
    await form.getByRole('button', { name: 'Create workload identity' }).click();
    const panel = page.getByRole('region', { name: new RegExp(`^Your new workload identity “${label}”`) });
    await panel.waitFor();
    return panel;
  }

  it("shows only the snippet of the identity's platform, and the exchange alone for another, which works as shown", async () => {
    await page.getByRole('link', { name: 'Workload identities' }).click();
    await page.getByRole('heading', { name: 'Workload identities' }).waitFor();

    // The local issuer is no known platform: a service account's subject says Kubernetes.
    const pod = await createIdentity('cluster jobs', 'system:serviceaccount:ci:deployer');
    expect(await pod.locator('pre').count()).toBe(1);
    expect(await pod.getByRole('heading', { level: 3 }).allTextContents()).toEqual(['Kubernetes pod']);
    await textOf(pod.getByTestId('snippet-kubernetes'), /serviceAccountName: deployer/);
    expect((await pod.getByTestId('snippet-kubernetes').textContent()) ?? '').toContain(`audience: ${AUDIENCE}`);
    await pod.getByRole('button', { name: 'Done' }).click();

    // Nothing says which platform: the exchange alone, for the issuer's token.
    const other = await createIdentity('runner', idp.workload.clientId);
    expect(await other.locator('pre').count()).toBe(1);
    expect(await other.getByRole('heading', { level: 3 }).allTextContents()).toEqual([
      'The exchange, from any platform',
    ]);
    const snippet = (await other.getByTestId('snippet-exchange').textContent()) ?? '';
    expect(snippet).not.toMatch(/GitHub|kubectl|serviceAccount/);
    await expectAccessible(page);
    await atBothWidths(page, 'workload-identity-exchange-snippet');

    // Run as written, with the issuer's token for the audience: an access token of this identity.
    const identityId = /client_id=([0-9a-f-]{36})/.exec(snippet)![1];
    const { stdout } = await run('bash', ['-euo', 'pipefail', '-c', `${snippet}\nprintf %s "$ACCESS_TOKEN"`], {
      env: { ...process.env, SUBJECT_TOKEN: await idp.workloadToken(AUDIENCE) },
    });
    expect(decodeJwt(stdout)).toMatchObject({ client_id: identityId, org: expect.any(String) });

    // "How to use" shows the same one snippet again.
    await other.getByRole('button', { name: 'Done' }).click();
    await page.getByRole('button', { name: 'How to use “runner”' }).click();
    const again = page.getByRole('region', { name: 'How to use “runner”' });
    expect(await again.locator('pre').count()).toBe(1);
    expect((await again.getByTestId('snippet-exchange').textContent()) ?? '').toBe(snippet);
    await again.getByRole('button', { name: 'Done' }).click();
  });

  it("says in the webhook form's hint that this server, outside production, accepts addresses on its own machine", async () => {
    await page.getByRole('link', { name: 'Webhooks' }).click();
    await page.getByRole('heading', { name: 'Webhooks', level: 1 }).waitFor();
    await page.getByRole('button', { name: 'Add webhook' }).click();
    const hint = page.getByText(/^An https address reachable from Gatehouse/);
    await textOf(
      hint,
      'An https address reachable from Gatehouse. This server does not run in production, so it also accepts ' +
        'addresses on its own machine (localhost, 127.0.0.1, [::1]), over http too. Private, link-local and reserved ' +
        'addresses are refused.',
    );
    // The field's description is the hint.
    const described = await page.getByLabel('Endpoint URL').getAttribute('aria-describedby');
    expect(await page.locator(`[id="${described}"]`).textContent()).toBe(await hint.textContent());
    await atBothWidths(page, 'webhook-form-hint', { accessible: false });

    // As it says: an http address on this machine is taken.
    await page.getByLabel('Endpoint URL').fill('http://127.0.0.1:9/hooks');
    await page.getByLabel('api_key.revoked').check();
    await page.getByRole('button', { name: 'Create webhook' }).click();
    await page.getByText('Signing secret of http://127.0.0.1:9/hooks').waitFor();
  });

  it('takes integration keys in password fields that no browser fills or keeps, and never shows them', async () => {
    await page.getByRole('link', { name: 'Integrations' }).click();
    await page.getByRole('link', { name: 'New integration' }).click();
    for (const label of ['API key', 'Application key']) {
      const field = page.getByLabel(label, { exact: true });
      expect(await field.getAttribute('type')).toBe('password');
      expect(await field.getAttribute('autocomplete')).toBe('off');
      await field.fill(`dd-${label === 'API key' ? 'api' : 'app'}-secret-0000001234`);
    }
    expect(await page.content()).not.toContain('dd-api-secret-0000001234');
    expect(await page.locator('body').innerText()).not.toContain('secret-0000001234');
    await expectAccessible(page);
    await atBothWidths(page, 'integration-new-password-fields');
  });
});
