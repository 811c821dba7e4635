import type { Page } from 'playwright-core';
import { IdentityProvider } from '../support/identity-provider';
import { untilPasses } from '../support/wait';
import { atBothWidths, ConsoleBrowser, containsText, textOf, valueOf, visible } from './console-browser';
import type { ConsoleServer } from './console-server';
import { buildIdentityProviderWorker } from './identity-provider-build';
import { WebhookReceiver } from './webhook-receiver';

/**
 * Every page of the console with something on it, at 1280 and 390 px (docs/console.md#tests): nothing wider than the
 * window, no serious axe-core violation, and a screenshot of each in test-artifacts/console/ (or CONSOLE_SCREENSHOTS)
 * named `screen-<page>-<width>.png`, to look at. The organization has what a team that uses Gatehouse has: members and
 * an invitation, keys with limits, usage on three channels, a revoked key and identity, single sign-on, a webhook with
 * deliveries, an OAuth app. The sign-in and no-access pages of single sign-on and the consent page are shot by
 * console-sso and mcp-consent, which reach them.
 */
const ORG = 'screens';
// Long enough to need two lines in a 390 px card: it may break only before its @ and dots.
const ADMIN = 'firstname.lastname@engineering.example-corporation.test';
const MEMBER = 'mo@screens.test';
const MINUTE = 60_000;

describe('every console page at 1280 and 390 px', () => {
  let removeWorker: () => void;
  let suite: ConsoleBrowser;
  let server: ConsoleServer;
  let idp: IdentityProvider;
  let receiver: WebhookReceiver;
  let page: Page;
  let token: string;
  const ids: { key?: string; revokedKey?: string; memberKey?: string; identity?: string; revokedIdentity?: string } =
    {};

  /** The admin's API call (their session token, as the admin CLI prints it); its JSON answer. */
  async function call(method: string, path: string, body?: object): Promise<Record<string, unknown>> {
    const response = await fetch(`${server.baseUrl}${path}`, {
      method,
      headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${await response.text()}`);
    return (await response.json()) as Record<string, unknown>;
  }

  /**
   * The page at `path`, once its heading is there, nothing says "Loading" and `ready` (what it shows last) is visible:
   * checked and shot at both widths.
   */
  async function screen(path: string, name: string, ready?: string): Promise<void> {
    await page.goto(path);
    await page.getByRole('heading', { level: 1 }).waitFor();
    await page.waitForFunction(() =>
      [...document.querySelectorAll('[role="status"]')].every((status) => !status.textContent?.startsWith('Loading')),
    );
    if (ready !== undefined) await visible(page.getByTestId(ready));
    await atBothWidths(page, `screen-${name}`);
  }

  beforeAll(async () => {
    removeWorker = await buildIdentityProviderWorker();
    receiver = await WebhookReceiver.start(() => ({ status: 200, body: '{"ok":true}' }), '/hooks/gatehouse');
    suite = await ConsoleBrowser.start({ WEBHOOK_POLL_INTERVAL_MS: '200' });
    server = suite.server;
    idp = await IdentityProvider.start({ redirectUris: [`${server.baseUrl}/v1/console/sso/callback`] });
    await server.member(ORG, ADMIN, 'admin');
    await server.member(ORG, MEMBER, 'member');
    token = String((await server.cli('session', '--email', ADMIN, '--org', ORG)).session_token);
    const memberToken = String((await server.cli('session', '--email', MEMBER, '--org', ORG)).session_token);

    // Keys: one with an allowlist and a rate limit, one revoked, and a member's.
    const key = (await call('POST', '/v1/user-api-keys', {
      label: 'deploy-bot',
      allowed_cidrs: ['203.0.113.0/24', '198.51.100.7'],
      rate_limit: { requests: 100, window_seconds: 60 },
    })) as { api_key: { id: string; organization_id: string } };
    ids.key = key.api_key.id;
    ids.revokedKey = (
      (await call('POST', '/v1/user-api-keys', { label: 'old laptop' })) as { api_key: { id: string } }
    ).api_key.id;
    await call('DELETE', `/v1/user-api-keys/${ids.revokedKey}`);
    const memberKey = await fetch(`${server.baseUrl}/v1/user-api-keys`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${memberToken}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ label: 'mo’s notebook' }),
    });
    ids.memberKey = ((await memberKey.json()) as { api_key: { id: string } }).api_key.id;

    // Two hours of the key's uses on three channels, as the counter writes them, refusals among them.
    const organizationId = key.api_key.organization_id;
    const now = Math.floor(Date.now() / MINUTE);
    const channels = [
      ['key_exchange', 12, 1],
      ['forward_auth', 40, 3],
      ['introspection', 6, 2],
    ] as const;
    for (const table of ['credential_usage_minutes', 'credential_usage_hours']) {
      const rows: unknown[] = [];
      const starts = new Set<number>();
      for (let minute = now - 120; minute < now; minute += table.endsWith('hours') ? 60 : 1) {
        starts.add(table.endsWith('hours') ? Math.floor(minute / 60) * 60 : minute);
      }
      for (const start of starts) {
        for (const [channel, succeeded, refused] of channels) {
          const scale = table.endsWith('hours') ? 60 : 1;
          rows.push(
            ids.key,
            start,
            channel,
            organizationId,
            succeeded * scale,
            (1 + ((start / scale) % 3)) * refused * scale,
          );
        }
      }
      await server.execute(
        `INSERT INTO ${table} (credential_id, minute, channel, credential_kind, organization_id, succeeded, refused)
         VALUES ${Array.from({ length: rows.length / 6 }, () => `(?, ?, ?, 'api_key', ?, ?, ?)`).join(', ')}`,
        rows,
      );
    }

    // Single sign-on through the identity provider, which is a workloads issuer too; two identities, one revoked.
    await call('PUT', '/v1/organization/single-sign-on', {
      issuer: idp.issuer,
      client_id: idp.people.clientId,
      client_secret: idp.people.clientSecret,
      email_domains: ['screens.test'],
      jit_role: 'viewer',
    });
    const issuerId = await server.trust(ORG, idp, 'workloads', 'https://gatehouse.screens.test');
    const identity = (subject: string, label: string) =>
      call('POST', '/v1/workload-identities', {
        label,
        trusted_issuer_id: issuerId,
        subject,
        scopes: ['api_keys:read'],
      }) as Promise<{ workload_identity: { id: string } }>;
    ids.identity = (await identity('system:serviceaccount:prod:deployer', 'prod deployer')).workload_identity.id;
    ids.revokedIdentity = (await identity('system:serviceaccount:ci:runner', 'ci runner')).workload_identity.id;
    await call('DELETE', `/v1/organization/workload-identities/${ids.revokedIdentity}`);

    // A webhook with a delivery, an invitation, an OAuth app.
    const webhook = (await call('POST', '/v1/organization/webhooks', {
      url: receiver.url,
      events: ['api_key.created', 'api_key.revoked', 'api_key.exposed', 'member.removed'],
    })) as { webhook: { id: string } };
    await call('POST', `/v1/organization/webhooks/${webhook.webhook.id}/test`);
    await call('POST', '/v1/organization/members/invitations', { email: 'nora@screens.test', role: 'member' });
    await call('POST', '/v1/organization/oauth-clients', {
      name: 'Internal notes assistant',
      redirect_uris: ['https://assistant.screens.test/oauth/callback', 'http://127.0.0.1:33418/callback'],
      confidential: true,
    });

    ({ page } = await suite.newPage());
  }, 180_000);

  afterAll(async () => {
    await suite?.stop();
    await IdentityProvider.stopAll();
    await receiver?.close();
    removeWorker?.();
  });

  it('the sign-in page', async () => {
    await page.goto('/console/sign-in');
    await page.getByRole('heading', { name: 'How to sign in' }).waitFor();
    await atBothWidths(page, 'screen-sign-in');
    await suite.signIn(page, ORG, ADMIN);
  });

  it('the keys, a key with its usage per channel, and a revoked key that says who revoked it', async () => {
    await screen('/console/keys', 'keys');
    await screen(`/console/keys/${ids.key}`, 'key');
    await page.getByText('Last 24 hours', { exact: true }).click();
    const perChannel = page.getByRole('region', { name: 'Per channel' });
    await untilPasses(async () => expect(await perChannel.getByRole('img').count()).toBe(3));
    await containsText(page.getByTestId('usage-channel-forward_auth'), 'Forward auth');
    await atBothWidths(page, 'screen-key-usage');

    await screen(`/console/keys/${ids.revokedKey}`, 'key-revoked', 'revoked-by');
    await textOf(page.getByTestId('revoked-by'), `by ${ADMIN} (its owner)`);
  });

  it('the organization keys, whose labels lead an admin to a key of any member, with its usage', async () => {
    await screen('/console/organization/keys', 'organization-keys');
    await page.getByRole('link', { name: 'mo’s notebook' }).click();
    await page.waitForURL(`**/console/organization/keys/${ids.memberKey}`);
    await page.getByRole('heading', { level: 1, name: /^Key “mo’s notebook”/ }).waitFor();
    await textOf(page.locator('.credential-facts div', { hasText: 'Owner' }).locator('dd'), MEMBER);
    await visible(page.getByRole('img', { name: /^Key “mo’s notebook”/ }));
    await atBothWidths(page, 'screen-organization-key');
    // Revoked here: the page says by whom.
    await call('DELETE', `/v1/organization/api-keys/${ids.memberKey}`);
    await page.reload();
    await textOf(page.getByTestId('revoked-by'), `by ${ADMIN} (an admin)`);
    await screen('/console/organization/usage', 'organization-usage');
  });

  it('the workload identities, and a revoked one that says who revoked it', async () => {
    await screen('/console/workload-identities', 'workload-identities');
    await screen(`/console/workload-identities/${ids.identity}`, 'workload-identity');
    await screen(`/console/workload-identities/${ids.revokedIdentity}`, 'workload-identity-revoked', 'revoked-by');
    await textOf(page.getByTestId('revoked-by'), `by ${ADMIN} (an admin)`);
  });

  it('the members, the webhooks and a delivery, the OAuth apps, the connected apps', async () => {
    await screen('/console/organization/members', 'members');
    await screen('/console/organization/webhooks', 'webhooks');
    await page.getByRole('button', { name: /^Deliveries of / }).click();
    const delivery = page.getByTestId('delivery').first();
    await untilPasses(async () =>
      expect(await delivery.locator('td[data-label="Status"]').textContent()).toBe('succeeded'),
    );
    await delivery.getByRole('button', { name: /^Details/ }).click();
    await visible(page.getByTestId('delivery-payload'));
    await atBothWidths(page, 'screen-webhook-delivery');
    await screen('/console/organization/oauth-apps', 'oauth-apps');
    await screen('/console/apps', 'connected-apps');
  });

  it('single sign-on, whose allowed origins an admin changes in its form', async () => {
    await screen('/console/organization/single-sign-on', 'single-sign-on', 'discovery');
    const form = page.getByRole('form', { name: 'Single sign-on' });
    const origins = form.getByLabel('Other allowed origins');
    await origins.fill(`${server.baseUrl}\n${server.baseUrl}/`);
    await form.getByRole('button', { name: 'Save single sign-on' }).click();
    await visible(form.getByText(/^Single sign-on saved\./));
    // Stored once, as an origin.
    await valueOf(origins, server.baseUrl);
    await atBothWidths(page, 'screen-single-sign-on-origins');
    // A refusal in words, nothing changed.
    await origins.fill('https://10.1.2.3');
    await form.getByRole('button', { name: 'Save single sign-on' }).click();
    await containsText(form.getByRole('alert'), 'https://10.1.2.3');
    await page.reload();
    await valueOf(page.getByLabel('Other allowed origins'), server.baseUrl);
  });

  it('the audit log, its filters applied, the settings, the integrations', async () => {
    await screen('/console/audit', 'audit');
    await screen('/console/audit?action=trusted_issuer.updated', 'audit-filtered');
    await textOf(page.locator('tbody td[data-label="Actor"]').first(), new RegExp(`^${ADMIN.replace(/\./g, '\\.')}`));
    await screen('/console/settings', 'settings');
    await screen('/console/integrations', 'integrations');
    await screen('/console/integrations/new', 'integration-new');
    await screen('/console/nowhere', 'not-found');
  });
});
