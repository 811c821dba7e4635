import { createTestApp, createTestDatabase, DATABASE_KIND } from '../support/test-app';

/**
 * Instances that start together on a database with pending migrations: one migrates, the others
 * wait for it and then start, on either database. On PostgreSQL the wait must not hold a snapshot:
 * a migration that builds an index CONCURRENTLY waits for every older snapshot in the database,
 * and a waiting instance blocked inside `pg_advisory_lock` would hold one (an undetectable deadlock).
 */
describe(`migrations at start on ${DATABASE_KIND}`, () => {
  it('brings up three instances started at once on a new database, migrated once', async () => {
    const database = createTestDatabase();
    const apps = await Promise.all([0, 1, 2].map(() => createTestApp({ database })));
    try {
      for (const t of apps) await t.http().get('/readyz').expect(200);
      const admin = await apps[0].user({ org: 'migrations' });
      const { value } = await apps[1].createKey(admin);
      await apps[2].exchange(value);
    } finally {
      for (const t of apps) await t.close();
      await database.drop();
    }
  }, 60_000);
});
