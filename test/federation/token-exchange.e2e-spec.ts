import { createPublicKey, generateKeyPairSync, sign } from 'node:crypto';
import { decodeJwt, SignJWT } from 'jose';
import * as client from 'openid-client';
import { DEFAULT_FEDERATION_TIMINGS, FEDERATION_TIMINGS } from '../../src/federation/federation-timings';
import { AuditService } from '../../src/audit/audit.service';
import { TrustedIssuersService } from '../../src/federation/trusted-issuers.service';
import type { TrustedIssuer } from '../../src/federation/trusted-issuer.entity';
import { IdentityService } from '../../src/identity/identity.service';
import { MembersService } from '../../src/members/members.service';
import { MetricsServer } from '../../src/metrics/metrics.server';
import { ResourceServersService } from '../../src/resource-servers/resource-servers.service';
import { AuditEventBody, auditPage } from '../support/audit-events';
import { b64, bearer, ISO_MS } from '../support/http-assertions';
import { clockAdvance } from '../support/clock';
import { waitFor } from '../support/wait';
import { IdentityProvider, newSigningKey, SigningKey } from '../support/identity-provider';
import { freePort } from '../support/ports';
import { createTestApp, TestApp, TestUser } from '../support/test-app';
import {
  ACCESS_TOKEN_TYPE,
  ID_TOKEN_TYPE,
  JWT_TYPE,
  SUBJECT_TOKEN_REFUSED as REFUSED,
  TOKEN_EXCHANGE_GRANT as GRANT,
  workloadForm,
} from '../support/token-exchange';
import { createVerifier } from '../../verifier/src/index';
import { msUntil, refusal } from '../support/verifier-checks';

const REDIRECT_URI = 'http://127.0.0.1:9/callback';
const ORDERS = 'https://orders.example.com';
/** How often an unknown kid may fetch an issuer's key set again, here (the default is 10 s). */
const JWKS_COOLDOWN_MS = 300;
/** RFC 9562 version 7: the audit entries' ids. */
const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

/**
 * RFC 8693 token exchange at POST /oauth/token (docs/federation.md#token-exchange), against a real identity provider
 * (node-oidc-provider in its own process): its client-credentials JWTs are the workloads' tokens, its ID tokens the
 * people's. Requests are made with openid-client's generic grant, as a platform's backend or a CI job would.
 */
describe('token exchange (RFC 8693)', () => {
  let t: TestApp;
  let idp: IdentityProvider;
  let issuer: string;
  let admin: TestUser;
  let workloads: TrustedIssuer;
  let config: client.Configuration;
  let identityId: string;

  const exchange = (form: Record<string, string>) => t.http().post('/oauth/token').type('form').send(form);
  /** The form of a workload's exchange naming the suite's identity (or `id`), with `extra` over it. */
  const named = (subjectToken: string, extra: Record<string, string> = {}, id = identityId) =>
    workloadForm(subjectToken, { client_id: id, ...extra });
  /** A workload token signed with the provider's own published key, with these claims over the usual ones. */
  const signed = (claims: Record<string, unknown>, options: { key?: SigningKey; kid?: string; typ?: string } = {}) => {
    const now = Math.floor(Date.now() / 1000);
    return idp.sign(
      {
        iss: idp.issuer,
        sub: idp.workload.clientId,
        aud: workloads.audience,
        iat: now,
        exp: now + 300,
        repository: 'acme/deploy',
        ...claims,
      },
      options,
    );
  };
  /**
   * A workload token signed with the provider's key under exactly `header` (alg RS256 and its kid unless given):
   * jose's SignJWT will not write a `crit` it does not know, so the JWS is put together here.
   */
  const signedWithHeader = (header: Record<string, unknown>) => {
    const now = Math.floor(Date.now() / 1000);
    const claims = { iss: idp.issuer, sub: idp.workload.clientId, aud: workloads.audience, iat: now, exp: now + 300 };
    const input = `${b64({ alg: 'RS256', kid: idp.keys[0].kid, ...header })}.${b64({ ...claims, repository: 'acme/deploy' })}`;
    return `${input}.${sign('sha256', Buffer.from(input), idp.keys[0].privateKey).toString('base64url')}`;
  };
  /** gatehouse_token_exchanges_total{outcome} as the metrics listener serves it (docs/operations.md#metrics). */
  const exchangesCounted = async (outcome: string): Promise<number> => {
    const { address, port } = t.get(MetricsServer).address()!;
    const text = await (await fetch(`http://${address}:${port}/metrics`)).text();
    const sample = new RegExp(`^gatehouse_token_exchanges_total\\{outcome="${outcome}"\\} (\\d+)$`, 'm').exec(text);
    return sample === null ? 0 : Number(sample[1]);
  };
  /** tx-acme's audit entries of `action` that the request answered with `response` wrote. */
  const auditedFor = async (action: string, response: { headers: Record<string, string> }) =>
    (await auditPage(t, admin, { action, limit: 200 })).audit_events.filter(
      (event) => event.request_id === response.headers['x-request-id'],
    );

  beforeAll(async () => {
    const port = await freePort();
    issuer = `http://127.0.0.1:${port}`;
    [t, idp] = await Promise.all([
      createTestApp({
        // More refused tokens than the default 20 a minute of one address; the limit has its own suite below.
        env: { JWT_ISSUER: issuer, PUBLIC_BASE_URL: issuer, TOKEN_FAILURE_LIMIT_PER_MINUTE: '100' },
        // An unknown kid may fetch the key set again after JWKS_COOLDOWN_MS rather than 10 s (the rotation below).
        override: (builder) =>
          builder
            .overrideProvider(FEDERATION_TIMINGS)
            .useValue({ ...DEFAULT_FEDERATION_TIMINGS, jwksCooldownMs: JWKS_COOLDOWN_MS }),
      }),
      IdentityProvider.start({ redirectUris: [REDIRECT_URI], workloadClaims: { repository: 'acme/deploy' } }),
    ]);
    await t.app.listen(port, '127.0.0.1');
    admin = await t.user({ org: 'tx-acme', role: 'admin' });
    await t.get(ResourceServersService).register('Orders', ORDERS);
    const issuers = t.get(TrustedIssuersService);
    workloads = await issuers.add({ organization: 'tx-acme', issuer: idp.issuer, kind: 'workloads', emailDomains: [] });
    await issuers.add({
      organization: 'tx-acme',
      issuer: idp.issuer,
      kind: 'people',
      clientId: idp.people.clientId,
      clientSecret: idp.people.clientSecret,
      emailDomains: [],
    });
    const created = await t
      .http()
      .post('/v1/workload-identities')
      .set(bearer(admin.token))
      .send({
        label: 'deploy from main',
        trusted_issuer_id: workloads.id,
        subject: idp.workload.clientId,
        conditions: { repository: 'acme/deploy' },
        scopes: ['api_keys:read'],
      })
      .expect(201);
    identityId = created.body.workload_identity.id;
    // The job names its identity: openid-client sends the client id as `client_id`.
    config = await client.discovery(new URL(issuer), identityId, undefined, client.None(), {
      algorithm: 'oauth2',
      execute: [client.allowInsecureRequests],
    });
  }, 40_000);
  afterAll(async () => {
    await IdentityProvider.stopAll();
    await t.close();
  });

  it('advertises the grant in the RFC 8414 metadata', () => {
    expect(config.serverMetadata().grant_types_supported).toEqual([
      'client_credentials',
      GRANT,
      'authorization_code',
      'refresh_token',
    ]);
  });

  describe('a workload', () => {
    it("exchanges its platform's JWT (openid-client) for an access token of the identity's owner, its scopes only", async () => {
      const subjectToken = await idp.workloadToken(workloads.audience);
      const tokens = await client.genericGrantRequest(config, GRANT, {
        subject_token: subjectToken,
        subject_token_type: JWT_TYPE,
      });
      expect({ type: tokens.token_type, issued: tokens.issued_token_type, scope: tokens.scope }).toEqual({
        type: 'bearer',
        issued: ACCESS_TOKEN_TYPE,
        scope: 'api_keys:read',
      });
      const claims = decodeJwt(tokens.access_token);
      expect(claims).toMatchObject({
        sub: admin.userId,
        org: admin.organizationId,
        client_id: identityId,
        client_type: 'workload_identity',
        token_use: 'access',
        aud: expect.any(String),
      });
      await t.http().get('/v1/user-api-keys').set(bearer(tokens.access_token)).expect(200);
      const denied = await t.http().post('/v1/user-api-keys').set(bearer(tokens.access_token)).send({ label: 'x' });
      expect(denied.status).toBe(403);
    });

    it('narrows by scope and resource as the client-credentials grant does', async () => {
      const subjectToken = await idp.workloadToken(workloads.audience);
      const answer = await exchange(named(subjectToken, { resource: ORDERS })).expect(200);
      expect(answer.body).toMatchObject({ issued_token_type: ACCESS_TOKEN_TYPE, token_type: 'Bearer' });
      expect(decodeJwt(answer.body.access_token).aud).toBe(ORDERS);
      const unknown = await exchange(named(subjectToken, { resource: 'https://nowhere.example' }));
      expect([unknown.status, unknown.body.error]).toEqual([400, 'invalid_target']);
      const wider = await exchange(named(subjectToken, { scope: 'api_keys:create' }));
      expect([wider.status, wider.body.error]).toEqual([400, 'invalid_scope']);
    });

    it.each([
      ['a token signed with a key the provider never published', () => signed({}, { kid: 'not-published' })],
      [
        'an expired token',
        () => signed({ iat: Math.floor(Date.now() / 1000) - 900, exp: Math.floor(Date.now() / 1000) - 300 }),
      ],
      [
        'a token issued in the future',
        () => signed({ iat: Math.floor(Date.now() / 1000) + 600, exp: Math.floor(Date.now() / 1000) + 900 }),
      ],
      ['a token for another audience', () => signed({ aud: 'https://elsewhere.example' })],
      ['a token of another subject', () => signed({ sub: 'someone-else' })],
      ['a token whose condition claim differs', () => signed({ repository: 'acme/other' })],
      ['a token living longer than an hour', () => signed({ exp: Math.floor(Date.now() / 1000) + 7200 })],
    ])('refuses %s with the one invalid_grant', async (_name, token) => {
      const answer = await exchange(named(await token()));
      expect([answer.status, answer.body]).toEqual([400, REFUSED]);
      expect(answer.headers['cache-control']).toBe('no-store');
    });

    it("refuses alg none, HS256 with the provider's public key, and an unknown issuer, the same way", async () => {
      const now = Math.floor(Date.now() / 1000);
      const payload = {
        iss: idp.issuer,
        sub: idp.workload.clientId,
        aud: workloads.audience,
        iat: now,
        exp: now + 300,
      };
      const none = `${Buffer.from(JSON.stringify({ alg: 'none' })).toString('base64url')}.${Buffer.from(
        JSON.stringify(payload),
      ).toString('base64url')}.`;
      const publicPem = createPublicKey(idp.keys[0].privateKey).export({ format: 'pem', type: 'spki' });
      const hs256 = await new SignJWT(payload)
        .setProtectedHeader({ alg: 'HS256', kid: idp.keys[0].kid })
        .sign(new TextEncoder().encode(String(publicPem)));
      const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
      const stranger = await new SignJWT({ ...payload, iss: 'https://idp.stranger.example' })
        .setProtectedHeader({ alg: 'ES256', kid: 'k' })
        .sign(privateKey);
      for (const token of [none, hs256, stranger, 'not a jwt']) {
        const answer = await exchange(named(token));
        expect([answer.status, answer.body]).toEqual([400, REFUSED]);
      }
      // Larger than a request body may be (BODY_LIMIT_BYTES, 16 KiB by default): refused before it is read.
      const oversized = await exchange(workloadForm('a'.repeat(20_000)));
      expect([oversized.status, oversized.body.error]).toEqual([413, 'invalid_request']);
    });

    it('refuses malformed requests with invalid_request, naming the problem', async () => {
      const token = await idp.workloadToken(workloads.audience);
      const cases: Array<[Record<string, string>, string]> = [
        [{ grant_type: GRANT, subject_token_type: JWT_TYPE }, 'subject_token is required'],
        [{ grant_type: GRANT, subject_token: token }, 'subject_token_type must be'],
        [workloadForm(token, { subject_token_type: 'urn:x' }), 'subject_token_type must be'],
        [workloadForm(token, { requested_token_type: ID_TOKEN_TYPE }), 'requested_token_type must be'],
        [workloadForm(token, { client_secret: 'x' }), 'takes no client authentication'],
        [workloadForm(token, { actor_token: 'x' }), 'actor_token is not supported'],
      ];
      for (const [form, message] of cases) {
        const answer = await exchange(form);
        expect({ form, status: answer.status, error: answer.body.error }).toEqual({
          form,
          status: 400,
          error: 'invalid_request',
        });
        expect(answer.body.error_description).toContain(message);
      }
    });

    it('revoking the identity stops its tokens at once: the API, introspection and forward auth', async () => {
      const owner = await t.user({ org: 'tx-acme', role: 'admin' });
      const created = await t
        .http()
        .post('/v1/workload-identities')
        .set(bearer(owner.token))
        .send({
          label: 'to revoke',
          trusted_issuer_id: workloads.id,
          subject: 'revocable-job',
          scopes: ['api_keys:read'],
        })
        .expect(201);
      const id = created.body.workload_identity.id as string;
      const subjectToken = await signed({ sub: 'revocable-job' });
      const plain = (await exchange(named(subjectToken, {}, id)).expect(200)).body.access_token as string;
      const forOrders = (await exchange(named(subjectToken, { resource: ORDERS }, id)).expect(200)).body
        .access_token as string;
      const { clientId, clientSecret } = await t.get(ResourceServersService).rotateSecret(ORDERS);
      const introspect = async () =>
        (
          await t
            .http()
            .post('/oauth/introspect')
            .auth(clientId, clientSecret)
            .type('form')
            .send({ token: forOrders })
            .expect(200)
        ).body.active as boolean;
      const forward = () =>
        t
          .http()
          .get(`/v1/forward-auth?audience=${encodeURIComponent(ORDERS)}&scope=api_keys:read`)
          .set(bearer(forOrders));
      await t.http().get('/v1/user-api-keys').set(bearer(plain)).expect(200);
      expect(await introspect()).toBe(true);
      expect((await forward()).status).toBe(200);

      await t.http().delete(`/v1/workload-identities/${id}`).set(bearer(owner.token)).expect(200);
      expect((await t.http().get('/v1/user-api-keys').set(bearer(plain))).status).toBe(401);
      expect(await introspect()).toBe(false);
      expect((await forward()).status).toBe(401);
      const again = await exchange(named(await signed({ sub: 'revocable-job' }), {}, id));
      expect([again.status, again.body]).toEqual([400, REFUSED]);
    });

    it("refuses a header with crit or b64 (RFC 7515 4.1.11, RFC 7797) though the signature is the provider's", async () => {
      // The same hand-made JWS without them is accepted: the header alone is what refuses the others.
      expect((await exchange(named(signedWithHeader({})))).status).toBe(200);
      const malformed = await exchangesCounted('subject_token_malformed');
      for (const header of [
        { crit: ['urn:example:policy'], 'urn:example:policy': 'strict' },
        { crit: ['b64'], b64: false },
        { crit: ['exp'], exp: Math.floor(Date.now() / 1000) + 300 },
        { b64: true },
      ]) {
        const answer = await exchange(named(signedWithHeader(header)));
        expect({ header, status: answer.status, body: answer.body }).toEqual({ header, status: 400, body: REFUSED });
      }
      expect(await exchangesCounted('subject_token_malformed')).toBe(malformed + 4);
    });

    it("records the exchange after the answer: once, the identity its target, its owner the actor, the token's sub", async () => {
      const owner = await t.user({ org: 'tx-acme', role: 'admin' });
      const created = await t
        .http()
        .post('/v1/workload-identities')
        .set(bearer(owner.token))
        .send({ label: 'audited', trusted_issuer_id: workloads.id, subject: 'audited-job', scopes: ['api_keys:read'] })
        .expect(201);
      const id = created.body.workload_identity.id as string;
      const started = Date.now();
      const answer = await exchange(named(await signed({ sub: 'audited-job' }), {}, id)).expect(200);
      const answered = Date.now();
      const entries = () => auditPage(t, admin, { action: 'workload_identity.exchanged', target_id: id });
      // Written in a batch up to 50 ms after the answer: read until it is there (2 s at most).
      const events: AuditEventBody[] = await waitFor('the exchange audited', async () => {
        const { audit_events } = await entries();
        return audit_events.length > 0 && audit_events;
      });
      expect(events).toEqual([
        {
          id: expect.stringMatching(UUID_V7),
          action: 'workload_identity.exchanged',
          reason: 'audited-job',
          occurred_at: expect.stringMatching(ISO_MS),
          actor_user_id: owner.userId,
          actor_api_key_id: null,
          actor_email: owner.email,
          target_type: 'workload_identity',
          target_id: id,
          target_email: null,
          target_label: null,
          previous_api_key_id: null,
          previous_api_key_expires_at: null,
          changes: null,
          client_ip: expect.any(String),
          request_id: answer.headers['x-request-id'],
        },
      ]);
      // The time of the exchange, not of the write; the id's first 48 bits are that millisecond.
      const occurredAt = Date.parse(events[0].occurred_at);
      expect(occurredAt).toBeGreaterThanOrEqual(started);
      expect(occurredAt).toBeLessThanOrEqual(answered);
      expect(parseInt(events[0].id.slice(0, 8) + events[0].id.slice(9, 13), 16)).toBe(occurredAt);
      // Once: a later batch does not write it again.
      await t.get(AuditService).flush();
      expect((await entries()).audit_events.map((event) => event.id)).toEqual([events[0].id]);
    });

    it('counts a wrong audience and a forged signature by reason, and audits neither: the token names no organization', async () => {
      const refusals: Array<[string, () => Promise<string>]> = [
        ['subject_token_wrong_audience', () => signed({ aud: 'https://elsewhere.example' })],
        // A kid the provider never published.
        ['subject_token_bad_signature', () => signed({}, { kid: 'not-published' })],
        // Another key under the provider's kid.
        ['subject_token_bad_signature', () => signed({}, { key: newSigningKey(), kid: idp.keys[0].kid })],
      ];
      for (const [outcome, token] of refusals) {
        const before = await exchangesCounted(outcome);
        const answer = await exchange(workloadForm(await token()));
        expect({ outcome, status: answer.status, body: answer.body }).toEqual({ outcome, status: 400, body: REFUSED });
        expect(await exchangesCounted(outcome)).toBe(before + 1);
        // Anyone can make a token naming a trusted issuer: only a verified one names an organization to audit it in.
        expect(await auditedFor('token.exchange_failed', answer)).toEqual([]);
      }
    });

    it("audits a verified token that matches no identity in the issuer's organization, before the answer", async () => {
      const before = await exchangesCounted('subject_token_no_workload_identity');
      const answer = await exchange(workloadForm(await signed({ sub: 'nobody-job' })));
      expect([answer.status, answer.body]).toEqual([400, REFUSED]);
      expect(await exchangesCounted('subject_token_no_workload_identity')).toBe(before + 1);
      expect(await auditedFor('token.exchange_failed', answer)).toEqual([
        expect.objectContaining({
          action: 'token.exchange_failed',
          reason: 'subject_token_no_workload_identity',
          actor_user_id: null,
          target_type: null,
          target_id: null,
        }),
      ]);
    });
  });

  it("revoking the identity: a resource server's verifier refuses its token within a second (the feed)", async () => {
    const created = await t
      .http()
      .post('/v1/workload-identities')
      .set(bearer(admin.token))
      .send({ label: 'verified', trusted_issuer_id: workloads.id, subject: 'verified-job', scopes: ['api_keys:read'] })
      .expect(201);
    const id = created.body.workload_identity.id as string;
    const token = (await exchange(named(await signed({ sub: 'verified-job' }), { resource: ORDERS }, id)).expect(200))
      .body.access_token as string;
    const { clientId, clientSecret } = await t.get(ResourceServersService).rotateSecret(ORDERS);
    const verifier = await createVerifier({ issuer, audience: ORDERS, clientId, clientSecret, maxStalenessSeconds: 2 });
    try {
      expect(await refusal(verifier, token)).toBe('accepted');
      const start = performance.now();
      await t.http().delete(`/v1/workload-identities/${id}`).set(bearer(admin.token)).expect(200);
      await msUntil(verifier, token, 'revoked');
      expect(performance.now() - start).toBeLessThan(1000);
    } finally {
      await verifier.close();
    }
  });

  describe('a person', () => {
    it('exchanges an ID token for a session token of the member with that e-mail address (openid-client)', async () => {
      const idToken = await idp.idToken(admin.email, REDIRECT_URI);
      const tokens = await client.genericGrantRequest(config, GRANT, {
        subject_token: idToken,
        subject_token_type: ID_TOKEN_TYPE,
      });
      expect(tokens.issued_token_type).toBe(JWT_TYPE);
      expect(tokens.expires_in).toBe(3600);
      expect(decodeJwt(tokens.access_token)).toMatchObject({
        sub: admin.userId,
        org: admin.organizationId,
        token_use: 'session',
      });
      const organization = await t.http().get('/v1/organization').set(bearer(tokens.access_token)).expect(200);
      expect(organization.body.organization.id).toBe(admin.organizationId);
    });

    it('refuses a person who is no member (no just-in-time role): invalid_grant, and no user is made', async () => {
      const email = 'stranger@people.example';
      const answer = await exchange({
        grant_type: GRANT,
        subject_token: await idp.idToken(email, REDIRECT_URI),
        subject_token_type: ID_TOKEN_TYPE,
      });
      expect([answer.status, answer.body]).toEqual([400, REFUSED]);
      expect(await t.get(IdentityService).userIdByEmail(email)).toBeNull();
    });

    it('refuses the ID token of a removed member, just-in-time role or not (invalid_grant, member_removed audited and counted), until an admin adds them again', async () => {
      const leaving = await t.user({ org: 'tx-acme', email: 'leaving@people.example', role: 'member' });
      const person = async (token?: string) =>
        exchange({
          grant_type: GRANT,
          subject_token: token ?? (await idp.idToken(leaving.email, REDIRECT_URI)),
          subject_token_type: ID_TOKEN_TYPE,
        });
      expect((await person()).status).toBe(200);
      // An ID token they still hold when they are removed.
      const held = await idp.idToken(leaving.email, REDIRECT_URI);
      await t.get(MembersService).remove(leaving.organizationId, leaving.userId);

      const issuers = t.get(TrustedIssuersService);
      const plain = (await issuers.list('tx-acme')).find((entry) => entry.kind === 'people')!;
      const people = {
        organization: 'tx-acme',
        issuer: idp.issuer,
        kind: 'people' as const,
        clientId: idp.people.clientId,
        clientSecret: idp.people.clientSecret,
      };
      await issuers.remove(plain.id);
      const jit = await issuers.add({ ...people, emailDomains: ['people.example'], jitRole: 'member' });
      try {
        const counted = await exchangesCounted('subject_token_member_removed');
        for (const refused of [await person(held), await person()]) {
          expect([refused.status, refused.body]).toEqual([400, REFUSED]);
          expect((await auditedFor('token.exchange_failed', refused)).map((event) => event.reason)).toEqual([
            'subject_token_member_removed',
          ]);
        }
        expect(await exchangesCounted('subject_token_member_removed')).toBe(counted + 2);
        expect(await t.get(IdentityService).access(leaving.organizationId, leaving.userId)).toBeNull();
        const added = await auditPage(t, admin, { action: 'member.added', target_id: leaving.userId });
        expect(added.audit_events).toEqual([]);

        // An admin adds them again: their ID tokens are exchanged, with the role the admin gave.
        await t.get(MembersService).setRole(leaving.organizationId, leaving.userId, 'viewer');
        const back = await person();
        expect(back.status).toBe(200);
        expect(decodeJwt(back.body.access_token as string)).toMatchObject({
          sub: leaving.userId,
          token_use: 'session',
        });
      } finally {
        await issuers.remove(jit.id);
        await issuers.add({ ...people, emailDomains: [] });
      }
    });

    it("refuses a workload's token presented as an ID token, and an ID token presented as a workload's", async () => {
      const idToken = await idp.idToken(admin.email, REDIRECT_URI);
      const asWorkload = await exchange(workloadForm(idToken));
      expect([asWorkload.status, asWorkload.body]).toEqual([400, REFUSED]);
      const asPerson = await exchange({
        grant_type: GRANT,
        subject_token: await idp.workloadToken(workloads.audience),
        subject_token_type: ID_TOKEN_TYPE,
      });
      expect([asPerson.status, asPerson.body]).toEqual([400, REFUSED]);
    });
  });

  it('picks up a rotated signing key of the provider through its JWKS', async () => {
    const rotating = await IdentityProvider.start();
    const entry = await t
      .get(TrustedIssuersService)
      .add({ organization: 'tx-acme', issuer: rotating.issuer, kind: 'workloads', emailDomains: [] });
    const created = await t
      .http()
      .post('/v1/workload-identities')
      .set(bearer(admin.token))
      .send({ label: 'rotating', trusted_issuer_id: entry.id, subject: rotating.workload.clientId, scopes: [] })
      .expect(201);
    const id = created.body.workload_identity.id as string;
    expect((await exchange(named(await rotating.workloadToken(entry.audience), {}, id))).status).toBe(200);
    await rotating.rotateSigningKey({ keepPrevious: false, key: newSigningKey() });
    // The key set was fetched a moment ago: the new kid fetches it again once the cooldown has passed.
    await clockAdvance(JWKS_COOLDOWN_MS + 1);
    const answer = await exchange(named(await rotating.workloadToken(entry.audience), {}, id));
    expect(answer.status).toBe(200);
  }, 20_000);

  it('answers 503 temporarily_unavailable, within seconds, when the provider cannot be reached', async () => {
    const other = await IdentityProvider.start();
    const entry = await t
      .get(TrustedIssuersService)
      .add({ organization: 'tx-acme', issuer: other.issuer, kind: 'workloads', emailDomains: [] });
    const token = await other.workloadToken(entry.audience);
    await other.setUnresponsive(true);
    const started = Date.now();
    const answer = await exchange(workloadForm(token));
    const elapsed = Date.now() - started;
    expect([answer.status, answer.body.error]).toEqual([503, 'temporarily_unavailable']);
    expect(elapsed).toBeLessThan(10_000);
  }, 20_000);
});

describe('token exchange and the failure limit', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp({ env: { TOKEN_FAILURE_LIMIT_PER_MINUTE: '3' } });
  });
  afterAll(() => t.close());

  it('counts refused subject tokens in the address window that POST /v1/token shares: then 429 for both', async () => {
    const user = await t.user({ org: 'tx-limit', role: 'member' });
    const key = await t.createKey(user, 'limited');
    const refused = () =>
      t
        .http()
        .post('/oauth/token')
        .type('form')
        .send({ grant_type: GRANT, subject_token: 'not.a.jwt', subject_token_type: JWT_TYPE });
    for (let i = 0; i < 3; i += 1) expect((await refused()).body).toEqual(REFUSED);
    const limited = await refused();
    expect([limited.status, limited.body.error]).toEqual([429, 'temporarily_unavailable']);
    expect(limited.headers['retry-after']).toMatch(/^\d+$/);
    const exchange = await t.http().post('/v1/token').set('Authorization', `ApiKey ${key.value}`);
    expect(exchange.status).toBe(429);
  });
});
