import { DataSource } from 'typeorm';
import { runTestCli } from '../support/cli';
import { duringAuditFailure } from '../support/audit-failure';
import { FakeDatadog } from '../support/fakes/fake-datadog';
import { apiKeyAuth, bearer, expectError } from '../support/http-assertions';
import { datadogKeys, resetFakeDatadog, startWithFakeDatadog, storedIntegrations } from '../support/monitoring';
import { DATABASE_KIND, TestApp, TestUser } from '../support/test-app';

/**
 * A change and its audit entry are stored together or not at all (docs/operations.md#transactions):
 * when the audit insert fails, the key creation, the revocation (by the owner or an admin), a member's
 * removal, the integration's create, update and delete and an organization settings change leave nothing behind, and the caller gets the filter's 500. The audit store is made to
 * fail by a trigger in the database, so the failure happens where a real one would: inside the
 * transaction, after the change itself was written.
 */
describe(`a change and its audit entry in one transaction on ${DATABASE_KIND}`, () => {
  let fake: FakeDatadog;
  let t: TestApp;
  let dataSource: DataSource;
  let admin: TestUser;
  const keys = datadogKeys('atomic');
  const config = { ...keys, site: 'datadoghq.eu' };
  const integrations = '/v1/notification-integrations';

  /** Runs `during` while audit inserts of `action` fail. */
  const whileAuditFails = <T>(action: string, during: () => Promise<T>): Promise<T> =>
    duringAuditFailure(dataSource, action, during);

  const auditRows = (targetId: string): Promise<Array<{ action: string }>> =>
    dataSource.query(`SELECT action FROM audit_events WHERE target_id = '${targetId}' ORDER BY occurred_at`);
  const keyRows = (user: TestUser): Promise<Array<{ id: string; status: string }>> =>
    dataSource.query(`SELECT id, status FROM api_keys WHERE user_id = '${user.userId}'`);

  beforeAll(async () => {
    ({ fake, t } = await startWithFakeDatadog());
    dataSource = t.get(DataSource);
    admin = await t.user({ org: 'atomic', role: 'admin' });
  });
  afterAll(async () => {
    await t.close();
    await fake.close();
  });
  beforeEach(() => resetFakeDatadog(fake, keys));

  describe('API keys', () => {
    it('a creation whose audit entry fails stores no key (500)', async () => {
      const user = await t.user({ org: 'atomic' });
      const response = await whileAuditFails('api_key.created', () =>
        t.http().post('/v1/user-api-keys').set(bearer(user.token)).send({ label: 'lost' }),
      );
      expectError(response, 500, 'INTERNAL', 'internal error', 'internal');
      expect(await keyRows(user)).toEqual([]);
      const listed = await t.http().get('/v1/user-api-keys?include_revoked=true').set(bearer(user.token)).expect(200);
      expect(listed.body.total_count).toBe(0);

      // And with the audit store back, the same request stores both.
      const created = await t.createKey(user, 'kept');
      expect(await keyRows(user)).toEqual([{ id: created.id, status: 'ACTIVE' }]);
      expect(await auditRows(created.id)).toEqual([{ action: 'api_key.created' }]);
    });

    it.each([
      ['without a grace period', {}],
      ['with a grace period', { grace_period_seconds: 3600 }],
    ])(
      'a rotation (%s) whose audit entry fails stores no new key and leaves the old one as it was (500)',
      async (_name, body) => {
        const user = await t.user({ org: 'atomic' });
        const key = await t.createKey(user);
        const response = await whileAuditFails('api_key.rotated', () =>
          t.http().post(`/v1/user-api-keys/${key.id}/rotate`).set(bearer(user.token)).send(body),
        );
        expectError(response, 500, 'INTERNAL', 'internal error', 'internal');
        expect(await keyRows(user)).toEqual([{ id: key.id, status: 'ACTIVE' }]);
        const read = await t.http().get(`/v1/user-api-keys/${key.id}`).set(bearer(user.token)).expect(200);
        expect(read.body.api_key).toMatchObject({ status: 'ACTIVE', expires_at: null });
        await t.http().post('/v1/token').set(apiKeyAuth(key.value)).expect(200);
        expect(await auditRows(key.id)).toEqual([{ action: 'api_key.created' }]);

        // With the audit store back, the same request stores the three together.
        const rotated = await t.http().post(`/v1/user-api-keys/${key.id}/rotate`).set(bearer(user.token)).send(body);
        expect(rotated.status).toBe(201);
        expect(await auditRows(rotated.body.api_key.id)).toEqual([{ action: 'api_key.rotated' }]);
        expect(await keyRows(user)).toHaveLength(2);
      },
    );

    it('a revocation whose audit entry fails leaves the key ACTIVE and usable (500)', async () => {
      const user = await t.user({ org: 'atomic' });
      const key = await t.createKey(user);
      const response = await whileAuditFails('api_key.revoked', () =>
        t.http().delete(`/v1/user-api-keys/${key.id}`).set(bearer(user.token)),
      );
      expectError(response, 500, 'INTERNAL', 'internal error', 'internal');
      expect(await keyRows(user)).toEqual([{ id: key.id, status: 'ACTIVE' }]);
      const read = await t.http().get(`/v1/user-api-keys/${key.id}`).set(bearer(user.token)).expect(200);
      expect(read.body.api_key.status).toBe('ACTIVE');
      await t.http().post('/v1/token').set(apiKeyAuth(key.value)).expect(200);
      expect(await auditRows(key.id)).toEqual([{ action: 'api_key.created' }]);

      const revoked = await t.http().delete(`/v1/user-api-keys/${key.id}`).set(bearer(user.token)).expect(200);
      expect(revoked.body.api_key.status).toBe('REVOKED');
      expect(await auditRows(key.id)).toEqual([{ action: 'api_key.created' }, { action: 'api_key.revoked' }]);
    });
  });

  describe('organization key management', () => {
    it("an admin's revocation whose audit entry fails leaves the key ACTIVE (500)", async () => {
      const member = await t.user({ org: 'atomic', role: 'member' });
      const key = await t.createKey(member);
      const response = await whileAuditFails('api_key.revoked', () =>
        t.http().delete(`/v1/organization/api-keys/${key.id}`).set(bearer(admin.token)),
      );
      expectError(response, 500, 'INTERNAL', 'internal error', 'internal');
      expect(await keyRows(member)).toEqual([{ id: key.id, status: 'ACTIVE' }]);
      await t.http().post('/v1/token').set(apiKeyAuth(key.value)).expect(200);

      await t.http().delete(`/v1/organization/api-keys/${key.id}`).set(bearer(admin.token)).expect(200);
      expect(await auditRows(key.id)).toEqual([{ action: 'api_key.created' }, { action: 'api_key.revoked' }]);
    });

    it('a member removal whose audit entries fail removes nothing and revokes nothing (CLI exit 2)', async () => {
      const member = await t.user({ org: 'atomic', role: 'member' });
      const keys = [await t.createKey(member), await t.createKey(member)];
      const removeMember = () => runTestCli(['remove-member', '--org', 'atomic', '--email', member.email], t.env);

      const failed = await whileAuditFails('api_key.revoked', removeMember);
      expect(failed).toMatchObject({ exitCode: 2, stdout: '' });
      expect(failed.stderr).toMatch(/^error: /);
      // Still a member, with both keys ACTIVE and usable, and nothing on record.
      await t.http().get('/v1/user-api-keys').set(bearer(member.token)).expect(200);
      expect(await keyRows(member)).toEqual(
        expect.arrayContaining(keys.map((key) => ({ id: key.id, status: 'ACTIVE' }))),
      );
      for (const key of keys) {
        await t.http().post('/v1/token').set(apiKeyAuth(key.value)).expect(200);
        expect(await auditRows(key.id)).toEqual([{ action: 'api_key.created' }]);
      }

      // With the audit store back, the same command does all of it.
      const removed = await removeMember();
      expect(removed).toEqual({
        exitCode: 0,
        stdout: `${JSON.stringify({ removed: true, revoked_keys: 2 })}\n`,
        stderr: '',
      });
      expect((await keyRows(member)).map((row) => row.status)).toEqual(['REVOKED', 'REVOKED']);
      await t.http().get('/v1/user-api-keys').set(bearer(member.token)).expect(401);
    });
  });

  describe('notification integrations', () => {
    const create = (name: string) =>
      t.http().post(integrations).set(bearer(admin.token)).send({ type: 'monitoring', name, config });

    it('a create whose audit entry fails stores nothing (500)', async () => {
      const response = await whileAuditFails('integration.created', () => create('never stored'));
      expectError(response, 500, 'INTERNAL', 'internal error', 'internal');
      expect((await storedIntegrations(t)).filter((row) => row.name === 'never stored')).toEqual([]);
    });

    it('an update whose audit entry fails leaves the record as it was (500)', async () => {
      const { body } = await create('before').expect(201);
      const id: string = body.notification_integration.id;
      const stored = (await storedIntegrations(t)).find((row) => row.id === id);

      const response = await whileAuditFails('integration.updated', () =>
        t.http().patch(`${integrations}/${id}`).set(bearer(admin.token)).send({ name: 'after' }),
      );
      expectError(response, 500, 'INTERNAL', 'internal error', 'internal');
      expect((await storedIntegrations(t)).find((row) => row.id === id)).toEqual(stored);
      expect(await auditRows(id)).toEqual([{ action: 'integration.created' }]);
    });

    it('a delete whose audit entry fails keeps the record (500)', async () => {
      const { body } = await create('kept').expect(201);
      const id: string = body.notification_integration.id;

      const response = await whileAuditFails('integration.deleted', () =>
        t.http().delete(`${integrations}/${id}`).set(bearer(admin.token)),
      );
      expectError(response, 500, 'INTERNAL', 'internal error', 'internal');
      const read = await t.http().get(`${integrations}/${id}`).set(bearer(admin.token)).expect(200);
      expect(read.body.notification_integration).toStrictEqual(body.notification_integration);
      expect(await auditRows(id)).toEqual([{ action: 'integration.created' }]);
    });
  });

  describe('organization settings', () => {
    it('a change whose audit entry fails leaves the settings as they were (500)', async () => {
      const read = () => t.http().get('/v1/organization').set(bearer(admin.token)).expect(200);
      const before = (await read()).body;
      const change = { access_token_lifetime: 60, max_key_lifetime_days: 5 };
      const response = await whileAuditFails('organization.updated', () =>
        t.http().patch('/v1/organization').set(bearer(admin.token)).send(change),
      );
      expectError(response, 500, 'INTERNAL', 'internal error', 'internal');
      expect((await read()).body).toStrictEqual(before);
      expect(await auditRows(admin.organizationId)).toEqual([]);

      await t.http().patch('/v1/organization').set(bearer(admin.token)).send(change).expect(200);
      expect((await read()).body.organization).toMatchObject(change);
      expect(await auditRows(admin.organizationId)).toEqual([{ action: 'organization.updated' }]);
    });
  });
});
