import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { ApiKeyCodec } from '../../src/api-keys/api-key-codec';
import { SecretHasher } from '../../src/common/secret-hasher';
import { ApiKeyScopesAndExpiry1764500000000 } from '../../src/database/migrations/1764500000000-api-key-scopes-and-expiry';
import { apiKeyAuth, bearer, decodeJwt, expectApiKeyRejected } from '../support/http-assertions';
import { migratedApp } from '../support/migrations';
import { createTestDatabase, DATABASE_KIND, testSecrets, TestApp } from '../support/test-app';

/**
 * Migration 1764500000000 on a database with keys made before it (docs/api.md#scopes, "Keys made before
 * scopes"): every key keeps working, without an expiry, with the defaults of its owner's role at
 * migration time; a key whose owner is no longer a member gets no scope.
 */
describe(`keys made before scopes and expiry, migrated on ${DATABASE_KIND}`, () => {
  const database = createTestDatabase();
  const codec = new ApiKeyCodec('dev');
  const hasher = new SecretHasher(testSecrets.API_KEY_PEPPER);
  const organizationId = randomUUID();
  const at = '2026-01-01T00:00:00.000Z';
  type Owner = 'admin' | 'member' | 'viewer' | 'removed';
  const owners: Record<Owner, { userId: string; email: string; keyId: string; value: string }> = {} as never;
  const revokedKeyId = randomUUID();
  let t: TestApp;

  beforeAll(async () => {
    // The schema as it was before the migration, with keys in it.
    t = await migratedApp(database, ApiKeyScopesAndExpiry1764500000000, async (old) => {
      await old.query(`INSERT INTO organizations (id, name, access_token_lifetime, created_at, updated_at)
        VALUES ('${organizationId}', 'migrated', 1800, '${at}', '${at}')`);
      for (const owner of ['admin', 'member', 'viewer', 'removed'] as const) {
        const userId = randomUUID();
        const keyId = randomUUID();
        const secret = ApiKeyCodec.newSecret();
        const email = `${owner}-${keyId.slice(0, 8)}@example.com`;
        owners[owner] = { userId, email, keyId, value: codec.format(keyId, secret) };
        await old.query(`INSERT INTO users (id, email, created_at) VALUES ('${userId}', '${email}', '${at}')`);
        if (owner !== 'removed') {
          await old.query(`INSERT INTO memberships (organization_id, user_id, role, created_at, updated_at)
            VALUES ('${organizationId}', '${userId}', '${owner}', '${at}', '${at}')`);
        }
        await old.query(`INSERT INTO api_keys (id, organization_id, user_id, label, secret_hash, status, created_at, updated_at)
          VALUES ('${keyId}', '${organizationId}', '${userId}', '${owner}', '${hasher.hash(secret)}', 'ACTIVE', '${at}', '${at}')`);
      }
      await old.query(`INSERT INTO api_keys (id, organization_id, user_id, label, secret_hash, status, created_at, updated_at, revoked_at)
        VALUES ('${revokedKeyId}', '${organizationId}', '${owners.admin.userId}', 'old', '${'0'.repeat(64)}', 'REVOKED',
          '${at}', '${at}', '${at}')`);
    });
  }, 60_000);
  afterAll(async () => {
    await t.close();
    await database.drop();
  });

  const sessionOf = (owner: Owner) =>
    t.user({ org: 'migrated', email: owners[owner].email, role: owner === 'removed' ? 'admin' : owner });

  it.each([
    // workload_identities:read: api_keys:read's successor since 1765870000000 (docs/adr/0052-one-credential-core.md)
    ['admin', ['api_keys:read', 'audit:read', 'integrations:read', 'integrations:write', 'workload_identities:read']],
    ['member', ['api_keys:read', 'integrations:read', 'workload_identities:read']],
    ['viewer', ['api_keys:read', 'integrations:read', 'workload_identities:read']],
  ] as const)("gives %s's key the defaults of the role, no expiry, and it keeps working", async (owner, scopes) => {
    const session = await sessionOf(owner);
    const { keyId, value } = owners[owner];
    const read = await t.http().get(`/v1/user-api-keys/${keyId}`).set(bearer(session.token)).expect(200);
    expect(read.body.api_key).toMatchObject({ status: 'ACTIVE', scopes, expires_at: null, label: owner });
    const exchanged = await t.http().post('/v1/token').set(apiKeyAuth(value)).expect(200);
    expect(exchanged.body.scope).toBe(scopes.join(' '));
    expect(decodeJwt(exchanged.body.access_token).payload.scope).toBe(scopes.join(' '));
    await t.http().get(`/v1/user-api-keys/${keyId}`).set(bearer(exchanged.body.access_token)).expect(200);
  });

  it('gives a revoked key its scopes too, and leaves it revoked', async () => {
    const session = await sessionOf('admin');
    const read = await t.http().get(`/v1/user-api-keys/${revokedKeyId}`).set(bearer(session.token)).expect(200);
    expect(read.body.api_key).toMatchObject({
      status: 'REVOKED',
      scopes: ['api_keys:read', 'audit:read', 'integrations:read', 'integrations:write', 'workload_identities:read'],
    });
  });

  it('gives the key of an owner who is no longer a member no scope: it identifies them, if added back, and nothing more', async () => {
    const { keyId, value } = owners.removed;
    const rows: Array<{ scopes: number | string }> = await t
      .get(DataSource)
      .query(`SELECT scopes FROM api_keys WHERE id = '${keyId}'`);
    expect(Number(rows[0].scopes)).toBe(0);
    expectApiKeyRejected(
      await t.http().post('/v1/token').set(apiKeyAuth(value)),
      'invalid api key credentials',
      'api_key_invalid_credentials',
    );
    const session = await sessionOf('removed');
    const exchanged = await t.http().post('/v1/token').set(apiKeyAuth(value)).expect(200);
    expect(exchanged.body.scope).toBe('');
    const read = await t.http().get(`/v1/user-api-keys/${keyId}`).set(bearer(session.token)).expect(200);
    expect(read.body.api_key.scopes).toEqual([]);
    await t.http().get(`/v1/user-api-keys/${keyId}`).set(bearer(exchanged.body.access_token)).expect(403);
  });

  (DATABASE_KIND === 'postgres' ? it : it.skip)(
    'leaves no default on PostgreSQL: an insert that does not name the scopes fails',
    async () => {
      const insert = t.get(DataSource).query(
        `INSERT INTO api_keys (id, organization_id, user_id, label, secret_hash, status, created_at, updated_at)
         VALUES ('${randomUUID()}', '${organizationId}', '${owners.admin.userId}', 'old version', '${'0'.repeat(64)}',
           'ACTIVE', '${at}', '${at}')`,
      );
      await expect(insert).rejects.toThrow(/null value in column "scopes"/);
    },
  );
});
