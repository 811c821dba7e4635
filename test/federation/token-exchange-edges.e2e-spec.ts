import { sign } from 'node:crypto';
import { decodeJwt } from 'jose';
import { AuditService } from '../../src/audit/audit.service';
import { TrustedIssuersService } from '../../src/federation/trusted-issuers.service';
import type { TrustedIssuer } from '../../src/federation/trusted-issuer.entity';
import { ResourceServersService } from '../../src/resource-servers/resource-servers.service';
import { auditPage } from '../support/audit-events';
import { b64, bearer } from '../support/http-assertions';
import { waitFor } from '../support/wait';
import { IdentityProvider } from '../support/identity-provider';
import { createTestApp, TestApp, TestUser } from '../support/test-app';
import {
  ID_TOKEN_TYPE,
  SUBJECT_TOKEN_REFUSED as REFUSED,
  TOKEN_EXCHANGE_GRANT as GRANT,
  workloadForm,
} from '../support/token-exchange';

const ORDERS = 'https://orders.example.com';

/**
 * The token exchange (docs/federation.md#token-exchange) against what a hostile or confused client sends: headers of
 * the wrong JSON type, RFC 8693's `audience`, a grant refused after the subject token was accepted; and the audit entry
 * of a subject longer than a refusal's code.
 */
describe('token exchange: edge cases', () => {
  let t: TestApp;
  let idp: IdentityProvider;
  let admin: TestUser;
  let workloads: TrustedIssuer;
  let identityId: string;

  const exchange = (form: Record<string, string>) => t.http().post('/oauth/token').type('form').send(form);
  /** The form of a workload's exchange naming the suite's identity (or `id`), with `extra` over it. */
  const named = (subjectToken: string, extra: Record<string, string> = {}, id = identityId) =>
    workloadForm(subjectToken, { client_id: id, ...extra });
  /** A token signed with the provider's published key under exactly `header` and `claims` over the usual ones. */
  const signed = (header: Record<string, unknown> = {}, claims: Record<string, unknown> = {}) => {
    const now = Math.floor(Date.now() / 1000);
    const payload = { iss: idp.issuer, sub: 'edge-job', aud: workloads.audience, iat: now, exp: now + 300, ...claims };
    const input = `${b64({ alg: 'RS256', kid: idp.keys[0].kid, ...header })}.${b64(payload)}`;
    return `${input}.${sign('sha256', Buffer.from(input), idp.keys[0].privateKey).toString('base64url')}`;
  };

  beforeAll(async () => {
    [t, idp] = await Promise.all([
      createTestApp({ env: { TOKEN_FAILURE_LIMIT_PER_MINUTE: '100' } }),
      IdentityProvider.start(),
    ]);
    admin = await t.user({ org: 'tx-edges', role: 'admin' });
    await t.get(ResourceServersService).register('Orders', ORDERS);
    workloads = await t
      .get(TrustedIssuersService)
      .add({ organization: 'tx-edges', issuer: idp.issuer, kind: 'workloads', emailDomains: [] });
    const created = await t
      .http()
      .post('/v1/workload-identities')
      .set(bearer(admin.token))
      .send({ label: 'edges', trusted_issuer_id: workloads.id, subject: 'edge-job', scopes: ['api_keys:read'] })
      .expect(201);
    identityId = created.body.workload_identity.id;
  }, 40_000);
  afterAll(async () => {
    await IdentityProvider.stopAll();
    await t.close();
  });

  it('the same hand-made token with a string typ is exchanged', async () => {
    expect((await exchange(named(signed({ typ: 'JWT' })))).status).toBe(200);
  });

  it.each([
    ['a number', 1],
    ['null', null],
    ['an object', { media: 'jwt' }],
    ['a list', ['JWT']],
  ])('refuses a header whose typ is %s with the one invalid_grant, not a 500', async (_name, typ) => {
    const answer = await exchange(named(signed({ typ })));
    expect([answer.status, answer.body]).toEqual([400, REFUSED]);
  });

  it("refuses RFC 8693's audience with invalid_target rather than ignoring it, before the subject token is read", async () => {
    const requests = [
      named(signed(), { audience: ORDERS }),
      named(signed(), { audience: ORDERS, resource: ORDERS }),
      { grant_type: GRANT, subject_token: signed(), subject_token_type: ID_TOKEN_TYPE, audience: ORDERS },
    ];
    for (const form of requests) {
      const answer = await exchange(form);
      expect({ form, status: answer.status, body: answer.body }).toEqual({
        form,
        status: 400,
        body: {
          error: 'invalid_target',
          error_description: 'audience is not supported: name a resource server with resource',
        },
      });
    }
    // With resource alone, the token is for the resource: what the client asked for.
    const answer = await exchange(named(signed(), { resource: ORDERS })).expect(200);
    expect(decodeJwt(answer.body.access_token).aud).toBe(ORDERS);
  });

  it('records no workload_identity.exchanged when the grant is then refused (scope, resource)', async () => {
    const wider = await exchange(named(signed(), { scope: 'api_keys:create' }));
    expect([wider.status, wider.body.error]).toEqual([400, 'invalid_scope']);
    const badSyntax = await exchange(named(signed(), { scope: 'api_keys:read api_keys:read' }));
    expect([badSyntax.status, badSyntax.body.error]).toEqual([400, 'invalid_scope']);
    const unknown = await exchange(named(signed(), { resource: 'https://nowhere.example' }));
    expect([unknown.status, unknown.body.error]).toEqual([400, 'invalid_target']);
    await t.get(AuditService).flush();
    const requests = new Set([wider, badSyntax, unknown].map((answer) => answer.headers['x-request-id']));
    const events = (
      await auditPage(t, admin, { action: 'workload_identity.exchanged', target_id: identityId, limit: 200 })
    ).audit_events.filter((event) => requests.has(event.request_id ?? ''));
    expect(events).toEqual([]);
  });

  it("audits the exchange of an identity whose subject is long (up to 1,024 characters), with the token's sub", async () => {
    // A Kubernetes service account's or a CI job's sub easily has more than 64 characters.
    const subject = `system:serviceaccount:payments-production:${'deployer-'.repeat(100)}`.slice(0, 1024);
    const created = await t
      .http()
      .post('/v1/workload-identities')
      .set(bearer(admin.token))
      .send({ label: 'long subject', trusted_issuer_id: workloads.id, subject, scopes: ['api_keys:read'] })
      .expect(201);
    const id = created.body.workload_identity.id as string;
    // Another exchange written in the same statement: one entry that does not fit would lose both.
    const [long, short] = await Promise.all([
      exchange(named(signed({}, { sub: subject }), {}, id)).expect(200),
      exchange(named(signed())).expect(200),
    ]);
    const requests = new Set([long, short].map((answer) => answer.headers['x-request-id']));
    const events: Array<{ target_id: string | null; reason: string | null }> = await waitFor(
      'both exchanges audited',
      async () => {
        const page = await auditPage(t, admin, { action: 'workload_identity.exchanged', limit: 200 });
        const ours = page.audit_events.filter((event) => requests.has(event.request_id ?? ''));
        return ours.length >= 2 && ours;
      },
    );
    expect(events.map((event) => [event.target_id, event.reason]).sort()).toEqual(
      [
        [id, subject],
        [identityId, 'edge-job'],
      ].sort(),
    );
  });
});
