import { DataSource } from 'typeorm';
import type { CliResult } from '../../src/cli';
import type { Environment } from '../../src/config/configuration';
import { ResourceServersService } from '../../src/resource-servers/resource-servers.service';
import { cliChecks, runTestCli } from '../support/cli';
import { allowedCode, tokenRequest } from '../support/code-flow';
import { UUID } from '../support/http-assertions';
import { createTestApp, DATABASE_KIND, TestApp, TestUser, testEnvironment } from '../support/test-app';

/**
 * The admin CLI's `oauth-client` commands (docs/mcp.md#clients): the operator registers an organization's client,
 * lists every registered client (the dynamic ones too) and removes any, its grants revoked; audited without an actor.
 */
const AUDIENCE = 'https://cli-clients.example.com/mcp';
const REDIRECT = 'http://127.0.0.1:40222/callback';

type Listed = { client_id: string; registration: string; organization_id: string | null; name: string };

describe(`gatehouse oauth-client (${DATABASE_KIND})`, () => {
  let t: TestApp;
  let env: Environment;
  let person: TestUser;

  beforeAll(async () => {
    t = await createTestApp({ env: { OAUTH_DYNAMIC_REGISTRATION: 'on' } });
    env = testEnvironment(t.database, { OAUTH_DYNAMIC_REGISTRATION: 'on' });
    person = await t.user({ org: 'cli-clients', role: 'member' });
    await t.user({ org: 'cli-others', role: 'admin' });
    await t.get(ResourceServersService).register('CLI MCP', AUDIENCE, []);
  });

  afterAll(async () => {
    await t.close();
  });

  const cli = (...argv: string[]): Promise<CliResult> => runTestCli(argv, env);
  const { ok, fails } = cliChecks(cli);

  it('adds a confidential client for an organization: its secret printed once, audited without an actor', async () => {
    const out = await ok<{ oauth_client: Listed & { confidential: boolean }; client_secret: string }>(
      'oauth-client',
      'add',
      '--org',
      'cli-clients',
      '--name',
      'Nightly report',
      '--redirect-uri',
      REDIRECT,
      '--redirect-uri',
      'https://reports.example.com/cb',
      '--confidential',
    );
    expect(out.oauth_client).toMatchObject({
      client_id: expect.stringMatching(UUID),
      registration: 'organization',
      organization_id: person.organizationId,
      name: 'Nightly report',
      redirect_uris: [REDIRECT, 'https://reports.example.com/cb'],
      confidential: true,
      created_by: null,
    });
    expect(out.client_secret).toMatch(/^gh_cs_/);
    const audit = await t
      .get(DataSource)
      .query(
        `SELECT action, actor_user_id, organization_id FROM audit_events WHERE target_id = '${out.oauth_client.client_id}'`,
      );
    expect(audit).toEqual([
      { action: 'oauth_client.created', actor_user_id: null, organization_id: person.organizationId },
    ]);
    const listed = await ok<{ oauth_clients: Listed[] }>('oauth-client', 'list', '--org', 'cli-clients');
    expect(JSON.stringify(listed)).not.toContain(out.client_secret);
    expect(listed.oauth_clients.map((c) => c.client_id)).toContain(out.oauth_client.client_id);
    const others = await ok<{ oauth_clients: Listed[] }>('oauth-client', 'list', '--org', 'cli-others');
    expect(others.oauth_clients).toEqual([]);
  });

  it('lists dynamic clients, and removes one with its grants', async () => {
    const registered = await t
      .http()
      .post('/oauth/register')
      .send({ client_name: 'Self', redirect_uris: [REDIRECT] });
    const clientId = registered.body.client_id as string;
    const { code, verifier } = await allowedCode(t, person, { clientId, redirectUri: REDIRECT, resource: AUDIENCE });
    const issued = await tokenRequest(t, {
      grant_type: 'authorization_code',
      code,
      client_id: clientId,
      redirect_uri: REDIRECT,
      code_verifier: verifier,
    }).expect(200);

    const dynamic = await ok<{ oauth_clients: Listed[] }>('oauth-client', 'list', '--kind', 'dynamic');
    expect(dynamic.oauth_clients.find((c) => c.client_id === clientId)).toMatchObject({
      registration: 'dynamic',
      organization_id: null,
      name: 'Self',
    });
    expect(dynamic.oauth_clients.every((c) => c.registration === 'dynamic')).toBe(true);
    const removed = await ok<{ removed: Listed }>('oauth-client', 'remove', '--id', clientId);
    expect(removed.removed.client_id).toBe(clientId);
    const refused = await tokenRequest(t, {
      grant_type: 'refresh_token',
      refresh_token: issued.body.refresh_token,
      client_id: clientId,
    }).expect(401);
    expect(refused.body.reason).toBe('client_unknown');
    const audit = await t
      .get(DataSource)
      .query(`SELECT reason FROM audit_events WHERE target_id = '${clientId}' AND action = 'oauth_client.removed'`);
    expect(audit).toEqual([{ reason: 'operator' }]);
    await fails(['oauth-client', 'remove', '--id', clientId], /no registered client has the id/);
  });

  it('checks its arguments before anything runs', async () => {
    await fails(
      ['oauth-client', 'add', '--org', 'cli-clients', '--name', 'x', '--redirect-uri', 'http://example.com/cb'],
      /must be https, http on a loopback host/,
    );
    await fails(['oauth-client', 'remove', '--id', 'not-an-id'], /--id must be a registered client_id/);
    await fails(['oauth-client', 'list', '--kind', 'other'], /Allowed choices are dynamic, organization/);
    await fails(
      ['oauth-client', 'add', '--org', 'no-such-org', '--name', 'x', '--redirect-uri', REDIRECT],
      /organization not found/,
    );
  });
});
