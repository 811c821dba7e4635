import { randomUUID } from 'node:crypto';
import { ApiKeyCodec } from '../../src/api-keys/api-key-codec';
import { SecretHasher } from '../../src/common/secret-hasher';
import { CredentialPermissions1765870000000 } from '../../src/database/migrations/1765870000000-credential-permissions';
import { Permission, permissionMask } from '../../src/identity/roles';
import { apiKeyAuth, bearer } from '../support/http-assertions';
import { migratedApp } from '../support/migrations';
import { createTestDatabase, DATABASE_KIND, testSecrets, TestApp } from '../support/test-app';

/**
 * Migration 1765870000000 (docs/adr/0052-one-credential-core.md#permissions): webhooks and workload identities were
 * gated by api_keys:*; a key made before keeps reaching them through the permissions that took over, and a key that
 * could not reach them still cannot.
 */
describe(`keys made before the webhooks and workload_identities permissions, migrated on ${DATABASE_KIND}`, () => {
  const database = createTestDatabase();
  const codec = new ApiKeyCodec('dev');
  const hasher = new SecretHasher(testSecrets.API_KEY_PEPPER);
  const organizationId = randomUUID();
  const userId = randomUUID();
  const email = `admin-${userId.slice(0, 8)}@example.com`;
  const at = '2026-12-01T00:00:00.000Z';
  const keys: Record<'manage' | 'own' | 'other', { scopes: Permission[]; id: string }> = {
    manage: { scopes: ['api_keys:manage'], id: randomUUID() },
    own: { scopes: ['api_keys:create', 'api_keys:read', 'api_keys:revoke'], id: randomUUID() },
    other: { scopes: ['integrations:read', 'audit:read'], id: randomUUID() },
  };
  const values: Record<keyof typeof keys, string> = { manage: '', own: '', other: '' };
  let t: TestApp;

  beforeAll(async () => {
    t = await migratedApp(database, CredentialPermissions1765870000000, async (old) => {
      await old.query(`INSERT INTO organizations (id, name, access_token_lifetime, created_at, updated_at)
        VALUES ('${organizationId}', 'migrated-permissions', 1800, '${at}', '${at}')`);
      await old.query(`INSERT INTO users (id, email, created_at) VALUES ('${userId}', '${email}', '${at}')`);
      await old.query(`INSERT INTO memberships (organization_id, user_id, role, created_at, updated_at)
        VALUES ('${organizationId}', '${userId}', 'admin', '${at}', '${at}')`);
      for (const name of Object.keys(keys) as Array<keyof typeof keys>) {
        const secret = ApiKeyCodec.newSecret();
        values[name] = codec.format(keys[name].id, secret);
        const mask = permissionMask(keys[name].scopes);
        await old.query(`INSERT INTO api_keys
            (id, organization_id, user_id, label, secret_hash, status, scopes, created_at, updated_at)
          VALUES ('${keys[name].id}', '${organizationId}', '${userId}', '${name}', '${hasher.hash(secret)}', 'ACTIVE',
            ${mask}, '${at}', '${at}')`);
      }
    });
  }, 60_000);
  afterAll(async () => {
    await t.close();
    await database.drop();
  });

  const tokenOf = async (name: keyof typeof keys): Promise<string> =>
    (await t.http().post('/v1/token').set(apiKeyAuth(values[name])).expect(200)).body.access_token as string;

  it('gives a key with api_keys:manage the webhooks and the organization identities, and it still reaches them', async () => {
    const admin = await t.user({ org: 'migrated-permissions', email, role: 'admin' });
    const read = await t.http().get(`/v1/user-api-keys/${keys.manage.id}`).set(bearer(admin.token)).expect(200);
    expect(read.body.api_key.scopes).toEqual([
      'api_keys:manage',
      'webhooks:read',
      'webhooks:write',
      'workload_identities:manage',
    ]);
    const token = await tokenOf('manage');
    await t.http().get('/v1/organization/webhooks').set(bearer(token)).expect(200);
    await t.http().get('/v1/organization/workload-identities').set(bearer(token)).expect(200);
    await t.http().get('/v1/workload-identities').set(bearer(token)).expect(403);
  });

  it("gives a key with the owner's key permissions the same over workload identities", async () => {
    const token = await tokenOf('own');
    const page = await t.http().get('/v1/workload-identities').set(bearer(token)).expect(200);
    expect(page.body.workload_identities).toEqual([]);
    await t.http().get('/v1/workload-identities/trusted-issuers').set(bearer(token)).expect(200);
    await t.http().delete(`/v1/workload-identities/${randomUUID()}`).set(bearer(token)).expect(404);
    await t.http().get('/v1/organization/webhooks').set(bearer(token)).expect(403);
  });

  it('gives a key without api_keys:* nothing new', async () => {
    const admin = await t.user({ org: 'migrated-permissions', email, role: 'admin' });
    const read = await t.http().get(`/v1/user-api-keys/${keys.other.id}`).set(bearer(admin.token)).expect(200);
    expect(read.body.api_key.scopes).toEqual(['audit:read', 'integrations:read']);
    const token = await tokenOf('other');
    await t.http().get('/v1/organization/webhooks').set(bearer(token)).expect(403);
    await t.http().get('/v1/workload-identities').set(bearer(token)).expect(403);
  });
});
