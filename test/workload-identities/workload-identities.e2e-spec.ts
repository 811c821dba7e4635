import { randomUUID } from 'node:crypto';
import type { TrustedIssuer } from '../../src/federation/trusted-issuer.entity';
import { IdentityService } from '../../src/identity/identity.service';
import { WorkloadIdentityMessages as M } from '../../src/workload-identities/workload-identity-matching';
import { auditPage } from '../support/audit-events';
import { bearer, expectError, expectInvalidArgument, ISO_MS } from '../support/http-assertions';
import { createTestApp, DATABASE_KIND, TEST_ISSUER, TestApp, TestUser } from '../support/test-app';
import {
  createIdentity,
  GITHUB,
  IDENTITY_FIELDS,
  IdentityBody,
  identityAudit,
  identityCount,
  trustIssuer,
  validBody,
} from './fixtures';

const DAY_MS = 86_400_000;
const CAP = 12;

/**
 * Workload identities, the owner's routes (docs/workload-identities.md): create with every refusal, list, read, revoke,
 * the audit trail, and one user's identities out of every other user's reach.
 */
/** The reason of each refusal's message (docs/api.md#errors). */
const REASONS: Record<string, string> = {
  [M.issuerNotFound]: 'workload_identity_issuer_not_found',
  [M.issuerNotForWorkloads]: 'workload_identity_issuer_not_for_workloads',
  [M.emptySubject]: 'workload_identity_subject_invalid',
  [M.subjectInvalid]: 'workload_identity_subject_invalid',
  [M.tooManyConditions]: 'workload_identity_conditions_invalid',
  [M.reservedClaim]: 'workload_identity_conditions_invalid',
  [M.unavailableClaim]: 'workload_identity_conditions_invalid',
  [M.conditionNotString]: 'workload_identity_conditions_invalid',
  [M.conditionValueInvalid]: 'workload_identity_conditions_invalid',
  [M.conditionsNotObject]: 'workload_identity_conditions_invalid',
  [M.claimNameInvalid]: 'workload_identity_conditions_invalid',
};

describe(`workload identities on ${DATABASE_KIND}`, () => {
  let t: TestApp;
  let admin: TestUser;
  let member: TestUser;
  let viewer: TestUser;
  let outsider: TestUser;
  let github: TrustedIssuer;
  let people: TrustedIssuer;
  let foreign: TrustedIssuer;
  let orgs = 0;

  beforeAll(async () => {
    t = await createTestApp({ env: { API_KEY_MAX_ACTIVE_PER_USER: String(CAP) } });
    admin = await t.user({ org: 'wi-acme', role: 'admin' });
    member = await t.user({ org: 'wi-acme', role: 'member' });
    viewer = await t.user({ org: 'wi-acme', role: 'viewer' });
    outsider = await t.user({ org: 'wi-other', role: 'admin' });
    github = await trustIssuer(t, admin.organizationId);
    people = await trustIssuer(t, admin.organizationId, { issuer: 'https://sso.acme.test', kind: 'people' });
    foreign = await trustIssuer(t, outsider.organizationId, { issuer: 'https://ci.other.test' });
  });
  afterAll(() => t.close());

  const post = (user: Pick<TestUser, 'token'>, body: unknown) =>
    t
      .http()
      .post('/v1/workload-identities')
      .set(bearer(user.token))
      .send(body as object);
  const get = (user: Pick<TestUser, 'token'>, id: string) =>
    t.http().get(`/v1/workload-identities/${id}`).set(bearer(user.token));
  const list = (user: Pick<TestUser, 'token'>, query: Record<string, string | number | boolean> = {}) =>
    t.http().get('/v1/workload-identities').query(query).set(bearer(user.token));
  const revoke = (user: Pick<TestUser, 'token'>, id: string) =>
    t.http().delete(`/v1/workload-identities/${id}`).set(bearer(user.token));

  /** A new organization with an admin, a member and its workloads issuer. */
  async function organization(): Promise<{ admin: TestUser; member: TestUser; issuer: TrustedIssuer }> {
    const name = `wi-org-${++orgs}`;
    const owner = await t.user({ org: name, role: 'admin' });
    return {
      admin: owner,
      member: await t.user({ org: name, role: 'member' }),
      issuer: await trustIssuer(t, owner.organizationId),
    };
  }

  describe('POST /v1/workload-identities', () => {
    it('creates an identity: 201, the whole record, audited', async () => {
      const before = Date.now();
      const response = await post(member, {
        label: 'deploys to production',
        trusted_issuer_id: github.id.toUpperCase(),
        subject: 'repo:acme/deploy:environment:production',
        conditions: { ref: 'refs/heads/main', repository: 'acme/deploy', environment: 'production' },
        scopes: ['integrations:read', 'api_keys:read'],
      }).expect(201);
      expect(response.headers['content-type']).toBe('application/json; charset=utf-8');
      const identity = response.body.workload_identity as IdentityBody;
      expect(Object.keys(response.body)).toEqual(['workload_identity']);
      expect(Object.keys(identity).sort()).toEqual([...IDENTITY_FIELDS].sort());
      expect(identity).toStrictEqual({
        id: expect.stringMatching(/^[0-9a-f-]{36}$/),
        organization_id: member.organizationId,
        user_id: member.userId,
        label: 'deploys to production',
        issuer: GITHUB,
        subject: 'repo:acme/deploy:environment:production',
        conditions: { environment: 'production', ref: 'refs/heads/main', repository: 'acme/deploy' },
        scopes: ['api_keys:read', 'integrations:read'],
        status: 'ACTIVE',
        created_at: expect.stringMatching(ISO_MS),
        updated_at: identity.created_at,
        expires_at: null,
        last_used_at: null,
        last_used_ip: null,
        revoked_at: null,
      });
      // Conditions in claim-name order.
      expect(Object.keys(identity.conditions)).toEqual(['environment', 'ref', 'repository']);
      expect(Date.parse(identity.created_at)).toBeGreaterThanOrEqual(before - 1000);
      expect(await identityAudit(t, identity.id)).toEqual([
        {
          action: 'workload_identity.created',
          reason: null,
          organization_id: member.organizationId,
          actor_user_id: member.userId,
          actor_api_key_id: null,
          target_type: 'workload_identity',
          target_id: identity.id,
        },
      ]);
      // The audit log API shows it too.
      const page = await auditPage(t, admin, { target_id: identity.id });
      expect(page.audit_events.map((event) => [event.action, event.target_type])).toEqual([
        ['workload_identity.created', 'workload_identity'],
      ]);
    });

    it('without conditions: none; scopes [] identify the owner only', async () => {
      const identity = await createIdentity(t, member, github, { conditions: undefined, scopes: [] });
      expect(identity.conditions).toEqual({});
      expect(identity.scopes).toEqual([]);
      const { body } = await get(member, identity.id).expect(200);
      expect(body.workload_identity).toStrictEqual(identity);
    });

    it('keeps every condition as given, claim names like Object methods included', async () => {
      const conditions = { toString: 'x', hasOwnProperty: 'y', valueOf: 'z', ref: 'refs/heads/main' };
      const identity = await createIdentity(t, member, github, { conditions });
      expect(identity.conditions).toStrictEqual({
        hasOwnProperty: 'y',
        ref: 'refs/heads/main',
        toString: 'x',
        valueOf: 'z',
      });
    });

    it.each(['__proto__', 'constructor', 'prototype'])(
      'refuses a condition on %s, which the request parser would drop, and stores nothing',
      async (claim) => {
        const before = await identityCount(t);
        const raw = JSON.stringify({ ...validBody(github), conditions: 'PLACEHOLDER' }).replace(
          '"PLACEHOLDER"',
          `{"repository": "acme/deploy", ${JSON.stringify(claim)}: "x"}`,
        );
        const response = await t
          .http()
          .post('/v1/workload-identities')
          .set(bearer(member.token))
          .set('Content-Type', 'application/json')
          .send(raw);
        expectError(response, 400, 'INVALID_ARGUMENT', M.unavailableClaim, 'workload_identity_conditions_invalid');
        expect(await identityCount(t)).toBe(before);
      },
    );

    it('keeps the subject exactly as given', async () => {
      const subject = ' system:serviceaccount:ci:deployer ';
      expect((await createIdentity(t, member, github, { subject })).subject).toBe(subject);
    });

    describe('refuses bad input with its reason, and stores nothing', () => {
      const seventeen = Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`claim_${i}`, 'x']));
      it.each<[string, (body: Record<string, unknown>) => Record<string, unknown>, string]>([
        ['an unknown trusted issuer', (b) => ({ ...b, trusted_issuer_id: randomUUID() }), M.issuerNotFound],
        ['a people issuer', (b) => ({ ...b, trusted_issuer_id: 'PEOPLE' }), M.issuerNotForWorkloads],
        ["another organization's issuer", (b) => ({ ...b, trusted_issuer_id: 'FOREIGN' }), M.issuerNotFound],
        ['an empty subject', (b) => ({ ...b, subject: '' }), M.emptySubject],
        ['a blank subject', (b) => ({ ...b, subject: '   ' }), M.emptySubject],
        ['a subject too long', (b) => ({ ...b, subject: 's'.repeat(1025) }), M.subjectInvalid],
        ['a subject with a NUL', (b) => ({ ...b, subject: 'repo:a\u0000' }), M.subjectInvalid],
        ['a number as a condition', (b) => ({ ...b, conditions: { run_attempt: 1 } }), M.conditionNotString],
        ['a boolean as a condition', (b) => ({ ...b, conditions: { protected: true } }), M.conditionNotString],
        ['a list as a condition', (b) => ({ ...b, conditions: { ref: ['a', 'b'] } }), M.conditionNotString],
        ['null as a condition', (b) => ({ ...b, conditions: { ref: null } }), M.conditionNotString],
        ['an empty condition value', (b) => ({ ...b, conditions: { ref: '' } }), M.conditionValueInvalid],
        ['17 conditions', (b) => ({ ...b, conditions: seventeen }), M.tooManyConditions],
        ['a condition on iss', (b) => ({ ...b, conditions: { iss: GITHUB } }), M.reservedClaim],
        ['a condition on aud', (b) => ({ ...b, conditions: { aud: TEST_ISSUER } }), M.reservedClaim],
        ['a condition on exp', (b) => ({ ...b, conditions: { exp: '1' } }), M.reservedClaim],
        ['a condition on sub', (b) => ({ ...b, conditions: { sub: 'x' } }), M.reservedClaim],
        ['conditions as a list', (b) => ({ ...b, conditions: [{ ref: 'x' }] }), M.conditionsNotObject],
        ['conditions as a string', (b) => ({ ...b, conditions: 'ref=x' }), M.conditionsNotObject],
        ['null conditions', (b) => ({ ...b, conditions: null }), M.conditionsNotObject],
      ])('%s', async (_case, change, message) => {
        const before = await identityCount(t);
        const body = change(validBody(github));
        if (body.trusted_issuer_id === 'PEOPLE') body.trusted_issuer_id = people.id;
        if (body.trusted_issuer_id === 'FOREIGN') body.trusted_issuer_id = foreign.id;
        expectError(await post(member, body), 400, 'INVALID_ARGUMENT', message, REASONS[message]);
        expect(await identityCount(t)).toBe(before);
      });

      it.each<[string, (body: Record<string, unknown>) => Record<string, unknown>]>([
        ['no label', ({ label: _label, ...b }) => b],
        ['a label that is not a string', (b) => ({ ...b, label: 7 })],
        ['a label too long', (b) => ({ ...b, label: 'l'.repeat(256) })],
        ['no trusted_issuer_id', ({ trusted_issuer_id: _id, ...b }) => b],
        ['a trusted_issuer_id that is not a UUID', (b) => ({ ...b, trusted_issuer_id: 'github' })],
        ['no subject', ({ subject: _subject, ...b }) => b],
        ['a subject that is not a string', (b) => ({ ...b, subject: 42 })],
        ['no scopes', ({ scopes: _scopes, ...b }) => b],
        ['an unknown scope', (b) => ({ ...b, scopes: ['api_keys:everything'] })],
        ['a scope twice', (b) => ({ ...b, scopes: ['api_keys:read', 'api_keys:read'] })],
        ['scopes as a string', (b) => ({ ...b, scopes: 'api_keys:read' })],
        ['an expiry in the past', (b) => ({ ...b, expires_at: '2020-01-01T00:00:00Z' })],
        ['an expiry sooner than 60 s', (b) => ({ ...b, expires_at: new Date(Date.now() + 30_000).toISOString() })],
        ['an expiry without a zone', (b) => ({ ...b, expires_at: '2099-01-01T00:00:00' })],
        ['an unknown property', (b) => ({ ...b, audience: 'x' })],
      ])('%s: 400 invalid request parameters', async (name, change) => {
        const before = await identityCount(t);
        // A well-formed expiry the rules refuse has its own reason; a malformed one is a malformed body.
        const expiryRefused = name === 'an expiry in the past' || name === 'an expiry sooner than 60 s';
        expectInvalidArgument(
          await post(member, change(validBody(github))),
          expiryRefused ? 'expires_at_invalid' : 'invalid_argument',
        );
        expect(await identityCount(t)).toBe(before);
      });

      it('a body that is not an object', async () => {
        expectInvalidArgument(await post(member, ['x']));
      });
    });

    describe('scopes: within what the creating request may do, as for keys', () => {
      it("a scope the creator's role lacks: 403, nothing stored", async () => {
        const before = await identityCount(t);
        expectError(
          await post(member, { ...validBody(github), scopes: ['api_keys:read', 'audit:read'] }),
          403,
          'PERMISSION_DENIED',
          'insufficient permissions',
          'scopes_exceed_permissions',
        );
        expect(await identityCount(t)).toBe(before);
      });

      it('a viewer may not create one at all (api_keys:create)', async () => {
        expectError(
          await post(viewer, validBody(github)),
          403,
          'PERMISSION_DENIED',
          'insufficient permissions',
          'insufficient_permissions',
        );
      });

      it("an access token's scopes narrow what it may give an identity", async () => {
        const key = await t.createKey(admin, 'automation', {
          scopes: ['workload_identities:create', 'api_keys:read'],
        });
        const token = await t.exchange(key.value);
        expectError(
          await post({ token }, { ...validBody(github), scopes: ['audit:read'] }),
          403,
          'PERMISSION_DENIED',
          'insufficient permissions',
          'scopes_exceed_permissions',
        );
        const identity = await createIdentity(t, { token }, github, { scopes: ['api_keys:read'] });
        expect(identity.user_id).toBe(admin.userId);
        expect((await identityAudit(t, identity.id))[0]).toMatchObject({
          action: 'workload_identity.created',
          actor_user_id: admin.userId,
          actor_api_key_id: key.id,
        });
      });
    });

    describe("expiry: within the organization's key policy and the caller's own key", () => {
      it('an expiry ahead is kept; none is none', async () => {
        const at = new Date(Date.now() + 7 * DAY_MS).toISOString();
        expect((await createIdentity(t, member, github, { expires_at: at })).expires_at).toBe(at);
        expect((await createIdentity(t, member, github, { expires_at: null })).expires_at).toBeNull();
      });

      it('under a key policy: none becomes creation + the maximum, a later one is refused', async () => {
        const org = await organization();
        await t.get(IdentityService).updateSettings(org.admin.organizationId, { maxKeyLifetimeDays: 30 });
        const identity = await createIdentity(t, org.member, org.issuer);
        expect(Date.parse(identity.expires_at!) - Date.parse(identity.created_at)).toBe(30 * DAY_MS);
        const within = new Date(Date.now() + 29 * DAY_MS).toISOString();
        expect((await createIdentity(t, org.member, org.issuer, { expires_at: within })).expires_at).toBe(within);
        const before = await identityCount(t);
        const later = new Date(Date.now() + 31 * DAY_MS).toISOString();
        expectInvalidArgument(
          await post(org.member, { ...validBody(org.issuer), expires_at: later }),
          'expires_at_invalid',
        );
        expect(await identityCount(t)).toBe(before);
      });

      it('with an access token: never past its key', async () => {
        const org = await organization();
        const keyExpiry = new Date(Date.now() + DAY_MS).toISOString();
        const key = await t.createKey(org.member, 'short', {
          scopes: ['workload_identities:create', 'api_keys:read'],
          expires_at: keyExpiry,
        });
        const token = await t.exchange(key.value);
        expect((await createIdentity(t, { token }, org.issuer)).expires_at).toBe(keyExpiry);
        const later = new Date(Date.now() + 2 * DAY_MS).toISOString();
        expectInvalidArgument(
          await post({ token }, { ...validBody(org.issuer), expires_at: later }),
          'expires_at_invalid',
        );
      });
    });

    it('at most API_KEY_MAX_ACTIVE_PER_USER usable identities per owner: then 400, until one is revoked', async () => {
      const org = await organization();
      const made = [];
      for (let i = 0; i < CAP; i += 1) made.push(await createIdentity(t, org.member, org.issuer, { label: `n${i}` }));
      expectError(
        await post(org.member, validBody(org.issuer)),
        400,
        'FAILED_PRECONDITION',
        'workload identity limit reached',
        'workload_identity_limit_reached',
      );
      // Another member's cap is their own.
      await createIdentity(t, org.admin, org.issuer);
      await revoke(org.member, made[0].id).expect(200);
      await createIdentity(t, org.member, org.issuer);
    });
  });

  describe('GET /v1/workload-identities', () => {
    it("lists the caller's own, newest first, paged; revoked ones only when asked", async () => {
      const org = await organization();
      const made: IdentityBody[] = [];
      for (let i = 0; i < 4; i += 1) made.push(await createIdentity(t, org.member, org.issuer, { label: `id ${i}` }));
      await createIdentity(t, org.admin, org.issuer, { label: 'not the member' });
      await revoke(org.member, made[1].id).expect(200);

      const { body } = await list(org.member).expect(200);
      expect(body).toStrictEqual({ workload_identities: expect.any(Array), page: 1, limit: 20, total_count: 3 });
      expect(body.workload_identities.map((identity: IdentityBody) => identity.label)).toEqual([
        'id 3',
        'id 2',
        'id 0',
      ]);
      const all = await list(org.member, { include_revoked: true }).expect(200);
      expect(all.body.total_count).toBe(4);
      expect(all.body.workload_identities.map((identity: IdentityBody) => identity.status)).toEqual([
        'ACTIVE',
        'ACTIVE',
        'REVOKED',
        'ACTIVE',
      ]);
      const second = await list(org.member, { include_revoked: true, page: 2, limit: 3 }).expect(200);
      expect(second.body).toMatchObject({ page: 2, limit: 3, total_count: 4 });
      expect(second.body.workload_identities.map((identity: IdentityBody) => identity.id)).toEqual([made[0].id]);
    });

    it('a viewer lists their own (api_keys:read)', async () => {
      expect((await list(viewer).expect(200)).body.workload_identities).toEqual([]);
    });

    it.each<Record<string, string | number>>([{ page: 0 }, { limit: 101 }, { include_revoked: 'yes' }, { other: 1 }])(
      'refuses the query %j',
      async (query) => {
        expectInvalidArgument(await list(member, query));
      },
    );
  });

  describe('GET and DELETE /v1/workload-identities/{id}', () => {
    it("reads one of the caller's; any case of its id", async () => {
      const identity = await createIdentity(t, member, github);
      expect((await get(member, identity.id).expect(200)).body).toStrictEqual({ workload_identity: identity });
      expect((await get(member, identity.id.toUpperCase()).expect(200)).body.workload_identity.id).toBe(identity.id);
    });

    it('revokes at once and for good, idempotently; audited once', async () => {
      const identity = await createIdentity(t, member, github);
      const { body } = await revoke(member, identity.id).expect(200);
      expect(body.workload_identity).toStrictEqual({
        ...identity,
        status: 'REVOKED',
        updated_at: expect.stringMatching(ISO_MS),
        revoked_at: expect.stringMatching(ISO_MS),
      });
      expect(body.workload_identity.revoked_at).toBe(body.workload_identity.updated_at);
      const again = await revoke(member, identity.id).expect(200);
      expect(again.body).toStrictEqual(body);
      expect((await get(member, identity.id).expect(200)).body).toStrictEqual(body);
      expect(await identityAudit(t, identity.id)).toEqual([
        expect.objectContaining({ action: 'workload_identity.created' }),
        {
          action: 'workload_identity.revoked',
          reason: 'user',
          organization_id: member.organizationId,
          actor_user_id: member.userId,
          actor_api_key_id: null,
          target_type: 'workload_identity',
          target_id: identity.id,
        },
      ]);
    });

    it('a viewer revokes their own (api_keys:revoke)', async () => {
      const org = await organization();
      const identity = await createIdentity(t, org.member, org.issuer);
      await t.get(IdentityService).setRole(org.member.organizationId, org.member.userId, 'viewer');
      expect((await revoke(org.member, identity.id).expect(200)).body.workload_identity.status).toBe('REVOKED');
    });

    it.each(['get', 'delete'] as const)(
      "%s: another user's, another organization's or an unknown identity is 404; nothing changes",
      async (method) => {
        const mine = await createIdentity(t, member, github);
        const other = await createIdentity(t, outsider, foreign);
        const call = method === 'get' ? get : revoke;
        for (const [user, id] of [
          [admin, mine.id],
          [viewer, mine.id],
          [outsider, mine.id],
          [member, other.id],
          [member, randomUUID()],
        ] as const) {
          expectError(
            await call(user, id),
            404,
            'NOT_FOUND',
            'workload identity not found',
            'workload_identity_not_found',
          );
        }
        expect((await get(member, mine.id).expect(200)).body.workload_identity.status).toBe('ACTIVE');
        expect((await get(outsider, other.id).expect(200)).body.workload_identity.status).toBe('ACTIVE');
        expect((await list(admin, { include_revoked: true })).body.workload_identities).not.toContainEqual(
          expect.objectContaining({ id: mine.id }),
        );
      },
    );

    it('a path id that is not a UUID: 400', async () => {
      expectInvalidArgument(await get(member, 'not-a-uuid'));
      expectInvalidArgument(await revoke(member, '123'));
    });
  });

  describe('GET /v1/workload-identities/trusted-issuers', () => {
    it("lists the organization's workload issuers with their audience, not its people issuer nor others'", async () => {
      const { body } = await t
        .http()
        .get('/v1/workload-identities/trusted-issuers')
        .set(bearer(member.token))
        .expect(200);
      expect(body).toStrictEqual({ trusted_issuers: [{ id: github.id, issuer: GITHUB, audience: TEST_ISSUER }] });
      const theirs = await t
        .http()
        .get('/v1/workload-identities/trusted-issuers')
        .set(bearer(outsider.token))
        .expect(200);
      expect(theirs.body.trusted_issuers.map((entry: { id: string }) => entry.id)).toEqual([foreign.id]);
    });

    it('needs api_keys:create', async () => {
      const response = await t.http().get('/v1/workload-identities/trusted-issuers').set(bearer(viewer.token));
      expectError(response, 403, 'PERMISSION_DENIED', 'insufficient permissions', 'insufficient_permissions');
    });
  });

  it('every route refuses a request without a token', async () => {
    for (const response of [
      await t.http().post('/v1/workload-identities').send(validBody(github)),
      await t.http().get('/v1/workload-identities'),
      await t.http().get(`/v1/workload-identities/${randomUUID()}`),
      await t.http().delete(`/v1/workload-identities/${randomUUID()}`),
    ]) {
      expectError(response, 401, 'UNAUTHENTICATED', 'user not authenticated', 'token_missing');
    }
  });
});
