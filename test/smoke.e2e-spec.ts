import { createTestApp, TestApp } from './support/test-app';

describe('smoke', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(() => t.close());

  it('creates a key, exchanges it and reads it with the access token', async () => {
    const user = await t.user();
    const key = await t.createKey(user, 'ci');
    const token = await t.exchange(key.value);
    const got = await t.http().get(`/v1/user-api-keys/${key.id}`).set('Authorization', `Bearer ${token}`).expect(200);
    expect(got.body.api_key.label).toBe('ci');
    expect(got.body.api_key.last_used_at).not.toBeNull();
  });
});
