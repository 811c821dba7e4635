import { DataSource } from 'typeorm';
import { createTestApp, TestApp } from './support/test-app';

/** The audit trail: who did what, when, stored in the database, never holding a secret. */
describe('audit trail', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
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

    const everything = JSON.stringify(await rows());
    expect(everything).not.toContain(key.value);
    expect(everything).not.toContain(key.value.split('.')[2]);
    expect(everything).not.toContain(user.token);
  });

  it('records the key an access token came from as the actor key', async () => {
    const user = await t.user({ org: 'audit-org' });
    const key = await t.createKey(user);
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
});
