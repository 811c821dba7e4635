import { performance } from 'node:perf_hooks';
import { DataSource } from 'typeorm';
import { AuditRetention, RETENTION_BATCH_SIZE, RETENTION_FIRST_BATCH_SIZE } from '../../src/audit/audit-retention';
import { AuditRepository } from '../../src/audit/audit.repository';
import { auditEvent, auditPage, seedAuditEvents } from '../support/audit-events';
import { bearer } from '../support/http-assertions';
import { pause, waitFor } from '../support/wait';
import { createTestApp, createTestDatabase, DATABASE_KIND, TestApp, TestUser } from '../support/test-app';

const DAY_MS = 24 * 60 * 60 * 1000;

/** `count` events of `organizationId` that occurred `ageDays` ago, a millisecond apart. */
function aged(organizationId: string, count: number, ageDays: number): ReturnType<typeof auditEvent>[] {
  const at = Date.now() - ageDays * DAY_MS;
  return Array.from({ length: count }, (_, i) => auditEvent(organizationId, { occurredAt: new Date(at - i) }));
}

async function countEvents(t: TestApp, organizationId: string): Promise<number> {
  const [row] = await t
    .get(DataSource)
    .query<Array<{ n: number | string }>>(
      `SELECT COUNT(*) AS n FROM audit_events WHERE organization_id = '${organizationId}'`,
    );
  return Number(row.n);
}

/** AUDIT_RETENTION_DAYS (docs/operations.md#retention): the service deletes old events itself. */
describe(`audit retention on ${DATABASE_KIND}`, () => {
  let t: TestApp;
  let orgs = 0;
  const freshAdmin = (app: TestApp = t): Promise<TestUser> =>
    app.user({ org: `audit-retention-${(orgs += 1)}`, role: 'admin' });

  beforeAll(async () => {
    t = await createTestApp({ env: { AUDIT_RETENTION_DAYS: '30' } });
  });
  afterAll(() => t.close());

  it('deletes the events older than AUDIT_RETENTION_DAYS and keeps the others', async () => {
    const admin = await freshAdmin();
    const now = new Date();
    const cutoff = now.getTime() - 30 * DAY_MS;
    const old = [
      auditEvent(admin.organizationId, { occurredAt: new Date(cutoff - 1) }),
      auditEvent(admin.organizationId, { occurredAt: new Date(cutoff - 400 * DAY_MS) }),
      // Without an organization (an exchange refused for an unknown key): pruned as well.
      auditEvent(null, { occurredAt: new Date(cutoff - 5) }),
    ];
    const kept = [
      auditEvent(admin.organizationId, { occurredAt: new Date(cutoff) }),
      auditEvent(admin.organizationId, { occurredAt: new Date(cutoff + 1000) }),
      auditEvent(admin.organizationId, { occurredAt: now }),
    ];
    await seedAuditEvents(t, [...old, ...kept]);

    const deleted = await t.get(AuditRetention).prune({ now });
    expect(deleted).toBeGreaterThanOrEqual(3);
    const ids = (await t.get(DataSource).query<Array<{ id: string }>>('SELECT id FROM audit_events')).map(
      (row) => row.id,
    );
    for (const event of old) expect(ids).not.toContain(event.id);
    for (const event of kept) expect(ids).toContain(event.id);
    expect((await auditPage(t, admin)).audit_events.map((e) => e.id).sort()).toEqual(kept.map((e) => e.id).sort());
    // The kept ones at the cutoff would be old by the next test's clock.
    await t.get(DataSource).query(`DELETE FROM audit_events WHERE organization_id = '${admin.organizationId}'`);
  });

  it(`deletes in statements of ${RETENTION_FIRST_BATCH_SIZE} events first, then sized to their time, at most ${RETENTION_BATCH_SIZE}`, async () => {
    const admin = await freshAdmin();
    await seedAuditEvents(t, aged(admin.organizationId, 2500, 31));
    const batches = jest.spyOn(t.get(AuditRepository), 'deleteOlderThan');
    try {
      expect(await t.get(AuditRetention).prune({ pauseMs: 0 })).toBe(2500);
      const limits = batches.mock.calls.map(([, limit]) => limit);
      const counts = await Promise.all(batches.mock.results.map((result) => result.value as Promise<number>));
      expect(limits[0]).toBe(RETENTION_FIRST_BATCH_SIZE);
      for (const [index, limit] of limits.entries()) {
        expect(limit).toBeLessThanOrEqual(index === 0 ? RETENTION_FIRST_BATCH_SIZE : 2 * limits[index - 1]);
        expect(limit).toBeLessThanOrEqual(RETENTION_BATCH_SIZE);
      }
      // Every statement but the last deleted as many as it could; the last found fewer: the end.
      expect(counts.slice(0, -1)).toEqual(limits.slice(0, -1));
      expect(counts.at(-1)).toBeLessThan(limits.at(-1)!);
    } finally {
      batches.mockRestore();
    }
    expect(await countEvents(t, admin.organizationId)).toBe(0);
  });

  it('answers requests and records new events while it runs (one short statement at a time)', async () => {
    const admin = await freshAdmin();
    await seedAuditEvents(t, aged(admin.organizationId, 6000, 60));
    const retention = t.get(AuditRetention);
    const runStarted = performance.now();
    const run = retention.prune({ maxBatchSize: 500, pauseMs: 50 });
    const answered: number[] = [];
    let keys = 0;
    while (retention.isRunning) {
      const started = performance.now();
      await t.createKey(admin);
      keys += 1;
      await t.http().get('/v1/audit-events').query({ limit: 5 }).set(bearer(admin.token)).expect(200);
      answered.push(performance.now() - started);
      await pause(10);
    }
    expect(await run).toBe(6000);
    const runMs = performance.now() - runStarted;
    // Requests were answered between the statements, not after the run: several while it ran, each
    // in well under the run's own length (both in the machine's time: the figures are printed).
    console.log(
      `audit retention (${DATABASE_KIND}): ${answered.length} requests answered during a ${runMs.toFixed(0)} ms run,` +
        ` the slowest in ${Math.max(...answered).toFixed(0)} ms`,
    );
    expect(answered.length).toBeGreaterThanOrEqual(5);
    expect(Math.max(...answered)).toBeLessThan(runMs / 2);
    expect(await countEvents(t, admin.organizationId)).toBe(keys);
  });

  it('runs at start', async () => {
    const admin = await freshAdmin();
    await seedAuditEvents(t, aged(admin.organizationId, 300, 31));
    const second = await createTestApp({ database: t.database, env: { AUDIT_RETENTION_DAYS: '30' } });
    try {
      await waitFor('the run at start done', async () => (await countEvents(t, admin.organizationId)) === 0);
      expect(await countEvents(t, admin.organizationId)).toBe(0);
    } finally {
      await second.close();
    }
  });

  it('stops after the current statement when the application closes', async () => {
    const database = createTestDatabase();
    const app = await createTestApp({ database, env: { AUDIT_RETENTION_DAYS: '30' } });
    try {
      await waitFor('the run at start over', () => !app.get(AuditRetention).isRunning);
      const admin = await freshAdmin(app);
      await seedAuditEvents(app, aged(admin.organizationId, 3000, 31));
      // A pause between statements far longer than the test may take: the close must cut it short.
      const run = app.get(AuditRetention).prune({ maxBatchSize: 100, pauseMs: 600_000 });
      await waitFor('the first statement deleted', async () => (await countEvents(app, admin.organizationId)) < 3000);
      await app.close();
      const deleted = await run;
      expect(deleted).toBeGreaterThan(0);
      expect(deleted).toBeLessThan(3000);
      // The events it did not reach are still there for the next start.
      const reopened = await createTestApp({ database, env: { AUDIT_RETENTION_DAYS: '36500' } });
      try {
        expect(await countEvents(reopened, admin.organizationId)).toBe(3000 - deleted);
      } finally {
        await reopened.close();
      }
    } finally {
      await database.drop();
    }
  });

  it('is safe with several instances pruning at once', async () => {
    const others = await Promise.all(
      [0, 1].map(() => createTestApp({ database: t.database, env: { AUDIT_RETENTION_DAYS: '30' } })),
    );
    try {
      // Their runs at start are over before the old events arrive.
      await waitFor('their runs at start over', () => others.every((app) => !app.get(AuditRetention).isRunning));
      const admin = await freshAdmin();
      await seedAuditEvents(t, aged(admin.organizationId, 3000, 31));
      const deleted = await Promise.all(
        [t, ...others].map((app) => app.get(AuditRetention).prune({ maxBatchSize: 200, pauseMs: 5 })),
      );
      // Each event deleted once, by one of them; no run failed (a failure resolves early and logs).
      expect(deleted.reduce((sum, n) => sum + n, 0)).toBe(3000);
      expect(await countEvents(t, admin.organizationId)).toBe(0);
    } finally {
      for (const app of others) await app.close();
    }
  });
});
