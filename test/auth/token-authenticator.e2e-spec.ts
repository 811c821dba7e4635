import { MembersService } from '../../src/members/members.service';
import { ResourceServersService } from '../../src/resource-servers/resource-servers.service';
import { bearer } from '../support/http-assertions';
import { createTestApp, TestApp, TestUser } from '../support/test-app';
import { SET_UP_TIMEOUT_MS } from '../support/timeouts';

/**
 * One token authenticator behind every entry point (docs/adr/0048-one-token-authenticator.md): a revoked credential
 * and a removed member are refused by each of them, each in its own protocol's words, at once; what happens in
 * another organization changes nothing.
 */
const FORM = 'application/x-www-form-urlencoded';
const AUDIENCE = 'https://orders.example.com';
const basic = (id: string, secret: string): string => `Basic ${Buffer.from(`${id}:${secret}`).toString('base64')}`;

interface Credential {
  keyId: string;
  key: string;
  /** For Gatehouse's own API. */
  ownToken: string;
  /** For the resource server of AUDIENCE. */
  resourceToken: string;
}

/** What each entry point answers, in the fields that differ between accepted and refused. */
interface Answers {
  bearer: { status: number; body: unknown; challenge: string | null };
  forwardAuth: { status: number; body: unknown; challenge: string | null };
  introspection: { status: number; body: unknown };
  keyExchange: { status: number; body: unknown; challenge: string | null };
  clientCredentials: { status: number; body: unknown };
}

const REFUSED: Answers = {
  bearer: {
    status: 401,
    body: { code: 'UNAUTHENTICATED', message: 'user not authenticated' },
    challenge: 'Bearer realm="gatehouse"',
  },
  forwardAuth: {
    status: 401,
    body: { code: 'UNAUTHENTICATED', message: 'user not authenticated' },
    challenge: 'Bearer realm="gatehouse", error="invalid_token"',
  },
  introspection: { status: 200, body: { active: false } },
  keyExchange: {
    status: 401,
    body: { code: 'UNAUTHENTICATED', message: 'api key revoked' },
    challenge: 'ApiKey realm="gatehouse"',
  },
  clientCredentials: { status: 401, body: { error: 'invalid_client', error_description: 'api key revoked' } },
};

describe('the token authenticator at every entry point', () => {
  let t: TestApp;
  let admin: TestUser;
  let member: TestUser;
  let resourceServer: { clientId: string; clientSecret: string };

  beforeAll(async () => {
    t = await createTestApp();
    admin = await t.user({ org: 'authenticator', role: 'admin' });
    member = await t.user({ org: 'authenticator', role: 'member' });
    resourceServer = await t.get(ResourceServersService).register('Orders', AUDIENCE);
  }, SET_UP_TIMEOUT_MS);

  afterAll(async () => {
    await t.close();
  });

  async function credential(owner: TestUser, label: string): Promise<Credential> {
    const created = await t.createKey(owner, label);
    return {
      keyId: created.id,
      key: created.value,
      ownToken: await t.exchange(created.value),
      resourceToken: await t.exchange(created.value, { resource: AUDIENCE }),
    };
  }

  async function answers(c: Credential): Promise<Answers> {
    const own = await t.http().get(`/v1/user-api-keys/${c.keyId}`).set(bearer(c.ownToken));
    const gateway = await t
      .http()
      .get(`/v1/forward-auth?audience=${encodeURIComponent(AUDIENCE)}&scope=api_keys:read`)
      .set(bearer(c.resourceToken));
    const introspection = await t
      .http()
      .post('/oauth/introspect')
      .type(FORM)
      .set('Authorization', basic(resourceServer.clientId, resourceServer.clientSecret))
      .send(new URLSearchParams({ token: c.resourceToken }).toString());
    const exchange = await t.http().post('/v1/token').set('Authorization', `ApiKey ${c.key}`);
    const grant = await t
      .http()
      .post('/oauth/token')
      .type(FORM)
      .send(
        new URLSearchParams({ grant_type: 'client_credentials', client_id: c.keyId, client_secret: c.key }).toString(),
      );
    const challenge = (response: { headers: Record<string, string | undefined> }) =>
      response.headers['www-authenticate'] ?? null;
    return {
      bearer: { status: own.status, body: own.status === 200 ? 'accepted' : own.body, challenge: challenge(own) },
      forwardAuth: {
        status: gateway.status,
        body: gateway.status === 200 ? 'accepted' : gateway.body,
        challenge: challenge(gateway),
      },
      introspection: {
        status: introspection.status,
        body: (introspection.body as { active: boolean }).active ? 'active' : introspection.body,
      },
      keyExchange: {
        status: exchange.status,
        body: exchange.status === 200 ? 'accepted' : exchange.body,
        challenge: challenge(exchange),
      },
      clientCredentials: { status: grant.status, body: grant.status === 200 ? 'accepted' : grant.body },
    };
  }

  const ACCEPTED: Answers = {
    bearer: { status: 200, body: 'accepted', challenge: null },
    forwardAuth: { status: 200, body: 'accepted', challenge: null },
    introspection: { status: 200, body: 'active' },
    keyExchange: { status: 200, body: 'accepted', challenge: null },
    clientCredentials: { status: 200, body: 'accepted' },
  };

  it('a revoked key: every entry point refuses it at once, each in its own words', async () => {
    const c = await credential(member, 'revoked');
    expect(await answers(c)).toEqual(ACCEPTED);
    await t.http().delete(`/v1/user-api-keys/${c.keyId}`).set(bearer(member.token)).expect(200);
    expect(await answers(c)).toEqual(REFUSED);
  });

  it("a key an admin revoked through the organization's keys: refused the same way", async () => {
    const c = await credential(member, 'revoked by an admin');
    await t.http().delete(`/v1/organization/api-keys/${c.keyId}`).set(bearer(admin.token)).expect(200);
    expect(await answers(c)).toEqual(REFUSED);
  });

  it('a removed member: every token and key of theirs is refused at every entry point the same way', async () => {
    const leaving = await t.user({ org: 'authenticator', role: 'member' });
    const c = await credential(leaving, 'leaving');
    expect(await answers(c)).toEqual(ACCEPTED);
    await t.get(MembersService).remove(leaving.organizationId, leaving.userId);
    expect(await answers(c)).toEqual(REFUSED);
    // The session token too, on Gatehouse's own API.
    const session = await t.http().get('/v1/user-api-keys').set(bearer(leaving.token));
    expect({ status: session.status, challenge: session.headers['www-authenticate'] }).toEqual({
      status: 401,
      challenge: 'Bearer realm="gatehouse"',
    });
  });

  it("another organization's revocation or removal changes nothing for this member's credentials", async () => {
    const c = await credential(member, 'untouched');
    const outsider = await t.user({ org: 'authenticator-other', role: 'admin' });
    const other = await credential(outsider, 'other organization');
    // The outsider's admin cannot revoke this organization's key (its id is unknown there) ...
    await t.http().delete(`/v1/organization/api-keys/${c.keyId}`).set(bearer(outsider.token)).expect(404);
    // ... and a member of the same name removed in another organization is another membership.
    const twin = await t.user({ org: 'authenticator-other', role: 'member', email: 'twin@example.com' });
    await t.get(MembersService).remove(twin.organizationId, twin.userId);
    await t.http().delete(`/v1/user-api-keys/${other.keyId}`).set(bearer(outsider.token)).expect(200);
    expect(await answers(c)).toEqual(ACCEPTED);
    expect(await answers(other)).toEqual(REFUSED);
  });

  it("a member cannot revoke an admin's key; the admin's credentials stay accepted", async () => {
    const c = await credential(admin, "admin's");
    const refused = await t.http().delete(`/v1/organization/api-keys/${c.keyId}`).set(bearer(member.token));
    expect(refused.status).toBe(403);
    await t.http().delete(`/v1/user-api-keys/${c.keyId}`).set(bearer(member.token)).expect(404);
    expect(await answers(c)).toEqual(ACCEPTED);
  });
});
