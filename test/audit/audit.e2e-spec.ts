import { Writable } from 'node:stream';
import { crc32 } from 'node:zlib';
import { DataSource } from 'typeorm';
import { AuditEvent } from '../../src/audit/audit-event.entity';
import { IdentityService } from '../../src/identity/identity.service';
import { FakeDatadog } from '../support/fakes/fake-datadog';
import { datadogKeys, startWithFakeDatadog } from '../support/monitoring';
import { createTestApp, TestApp } from '../support/test-app';

/** The audit trail: who did what, when, stored in the database, never holding a secret. */
describe('audit trail', () => {
  let t: TestApp;
  let logged = '';
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      logged += chunk.toString('utf8');
      done();
    },
  });
  const logLines = (): Array<Record<string, unknown>> =>
    logged
      .split('\n')
      .filter((line) => line !== '')
      .map((line) => JSON.parse(line) as Record<string, unknown>);
  beforeAll(async () => {
    t = await createTestApp({ env: { LOG_LEVEL: 'info' }, logStream: sink });
  });
  afterAll(() => t.close());

  const rows = (): Promise<Array<Record<string, unknown>>> =>
    t.get(DataSource).query('SELECT * FROM audit_events ORDER BY occurred_at, id');

  it('records key creation and revocation with actor, organization, target, time and request id', async () => {
    const user = await t.user({ org: 'audit-org' });
    const key = await t.createKey(user, 'audited');
    const revoke = await t
      .http()
      .delete(`/v1/user-api-keys/${key.id}`)
      .set('Authorization', `Bearer ${user.token}`)
      .set('X-Request-Id', 'audit-test-revoke')
      .expect(200);
    // Revoking again changes nothing and is not recorded again.
    await t.http().delete(`/v1/user-api-keys/${key.id}`).set('Authorization', `Bearer ${user.token}`).expect(200);

    const events = (await rows()).filter((row) => row.target_id === key.id);
    expect(events.map((e) => e.action)).toEqual(['api_key.created', 'api_key.revoked']);
    for (const event of events) {
      expect(event).toMatchObject({
        organization_id: user.organizationId,
        actor_user_id: user.userId,
        target_type: 'api_key',
      });
      expect(new Date(event.occurred_at as string).getTime()).not.toBeNaN();
    }
    expect(events[1].request_id).toBe(revoke.headers['x-request-id']);
    expect(events.map((e) => e.reason)).toEqual([null, 'user']);

    const everything = JSON.stringify(await rows());
    expect(everything).not.toContain(key.value);
    expect(everything).not.toContain(key.value.split('.')[2]);
    expect(everything).not.toContain(user.token);
  });

  it('records the key an access token came from as the actor key', async () => {
    const user = await t.user({ org: 'audit-org' });
    const key = await t.createKey(user, 'creator', { scopes: ['api_keys:create'] });
    const token = await t.exchange(key.value);
    const created = await t
      .http()
      .post('/v1/user-api-keys')
      .set('Authorization', `Bearer ${token}`)
      .send({ label: 'made with an access token' })
      .expect(201);
    const event = (await rows()).find((row) => row.target_id === created.body.api_key.id);
    expect(event).toMatchObject({ action: 'api_key.created', actor_user_id: user.userId, actor_api_key_id: key.id });
  });

  it('records every refused exchange that names a key id with its reason, and logs the others, never the presented value', async () => {
    const user = await t.user({ org: 'audit-exchange' });
    const active = await t.createKey(user);
    const revoked = await t.createKey(user);
    await t.http().delete(`/v1/user-api-keys/${revoked.id}`).set('Authorization', `Bearer ${user.token}`).expect(200);
    const leaver = await t.user({ org: 'audit-exchange', role: 'member' });
    const orphan = await t.createKey(leaver);
    await t.get(IdentityService).removeMember(leaver.organizationId, leaver.userId);
    const [env, hexId, secret, sum] = active.value.split('.');
    const wrongSecret = `${env}.${hexId}.${secret.slice(0, -1)}${secret.endsWith('A') ? 'Q' : 'A'}`;
    const wrongSecretValue = `${wrongSecret}.${crc32(wrongSecret).toString(16).padStart(8, '0')}`;

    const attempts: Array<[string | undefined, string]> = [
      [undefined, 'missing_header'],
      [`Bearer ${user.token}`, 'wrong_scheme'],
      [`ApiKey ${env}.${hexId}.${secret}.00000000`, 'malformed_key'],
      [`ApiKey ${wrongSecretValue}`, 'invalid_credentials'],
      [`ApiKey ${revoked.value}`, 'revoked'],
      [`ApiKey ${orphan.value}`, 'not_a_member'],
    ];
    for (const [header, reason] of attempts) {
      const call = t.http().post('/v1/token').set('X-Request-Id', `audit-${reason}`);
      await (header === undefined ? call : call.set('Authorization', header)).expect(401);
    }
    expect(sum).toMatch(/^[0-9a-f]{8}$/);

    const failures = (await rows()).filter((row) => row.action === 'token.exchange_failed');
    const byReason = Object.fromEntries(failures.map((row) => [row.reason, row]));
    // Without a key id (steps 1-3) a refusal is a log line, not a database write: anyone can send those.
    expect(Object.keys(byReason).sort()).toEqual(['invalid_credentials', 'not_a_member', 'revoked']);
    for (const reason of ['missing_header', 'wrong_scheme', 'malformed_key']) {
      const lines = logLines().filter((line) => line.requestId === `audit-${reason}` && line.reason !== undefined);
      expect(lines).toEqual([
        expect.objectContaining({ level: 'info', msg: 'token exchange refused', reason, ip: expect.any(String) }),
      ]);
    }
    expect(byReason.invalid_credentials).toMatchObject({
      target_type: 'api_key',
      target_id: active.id,
      organization_id: null,
    });
    expect(byReason.revoked).toMatchObject({
      target_id: revoked.id,
      organization_id: user.organizationId,
      actor_user_id: user.userId,
    });
    expect(byReason.not_a_member).toMatchObject({ target_id: orphan.id, actor_user_id: leaver.userId });
    expect(byReason.invalid_credentials.request_id).toBe('audit-invalid_credentials');
    for (const row of failures) expect(row.client_ip).toEqual(expect.any(String));

    const everything = JSON.stringify(await rows()) + logged;
    for (const value of [active.value, revoked.value, orphan.value, wrongSecretValue, user.token]) {
      expect(everything).not.toContain(value.split('.')[2]);
    }
  });

  it('does not record a successful exchange as a failure', async () => {
    const user = await t.user({ org: 'audit-success' });
    const key = await t.createKey(user);
    await t.exchange(key.value);
    const failures = (await rows()).filter((row) => row.action === 'token.exchange_failed' && row.target_id === key.id);
    expect(failures).toEqual([]);
  });
});

describe('audit trail: notification integrations', () => {
  let fake: FakeDatadog;
  let t: TestApp;
  beforeAll(async () => {
    ({ fake, t } = await startWithFakeDatadog());
  });
  afterAll(async () => {
    await t.close();
    await fake.close();
  });

  it('records create, update and delete with actor and organization, and never the provider keys', async () => {
    const admin = await t.user({ org: 'audit-integrations' });
    const keys = datadogKeys('audited');
    const path = '/v1/notification-integrations';
    const auth = { Authorization: `Bearer ${admin.token}` };
    const created = await t
      .http()
      .post(path)
      .set(auth)
      .send({ type: 'monitoring', name: 'prod', config: { ...keys, site: 'datadoghq.com' } })
      .expect(201);
    const id = created.body.notification_integration.id;
    await t.http().patch(`${path}/${id}`).set(auth).send({ name: 'renamed' }).expect(200);
    // A blocked save changes nothing and is not an "updated" event.
    fake.revoke('monitors_read');
    await t.http().patch(`${path}/${id}`).set(auth).send({ name: 'blocked' }).expect(400);
    await t.http().delete(`${path}/${id}`).set(auth).expect(200);

    const events = await t
      .get(DataSource)
      .getRepository(AuditEvent)
      .find({ where: { targetId: id }, order: { occurredAt: 'ASC', id: 'ASC' } });
    expect(events.map((e) => e.action)).toEqual(['integration.created', 'integration.updated', 'integration.deleted']);
    for (const event of events) {
      expect(event).toMatchObject({
        organizationId: admin.organizationId,
        actorUserId: admin.userId,
        targetType: 'notification_integration',
      });
    }
    const everything = JSON.stringify(await t.get(DataSource).query('SELECT * FROM audit_events'));
    expect(everything).not.toContain(keys.api_key);
    expect(everything).not.toContain(keys.application_key);
  });
});
