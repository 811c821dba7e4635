import type { Pool } from 'pg';
import { DataSource } from 'typeorm';
import type { PostgresDriver } from 'typeorm/driver/postgres/PostgresDriver.js';
import { AuditEventFilters, AuditRepository } from '../../src/audit/audit.repository';
import { auditEvent, seedAuditEvents } from '../support/audit-events';
import { explain } from '../support/query-plans';
import { createTestApp, DATABASE_KIND, TestApp } from '../support/test-app';

/**
 * The audit log's queries stay on their indexes (docs/adr/0018-audit-event-pages.md): a page of any
 * filter combination, first or deep, reads an index in list order (no scan of the table, no sort of
 * the organization's events before the LIMIT), and retention finds the oldest events by index.
 */
describe(`audit_events query plans on ${DATABASE_KIND}`, () => {
  let t: TestApp;
  let dataSource: DataSource;
  let repository: AuditRepository;
  const organizationId = '11111111-1111-4111-8111-111111111111';
  const actor = '22222222-2222-4222-8222-222222222222';
  const target = '33333333-3333-4333-8333-333333333333';
  const position = {
    occurredAt: Date.parse('2029-01-01T00:00:00Z') * 1000 + 123,
    id: '44444444-4444-4444-8444-444444444444',
  };

  beforeAll(async () => {
    t = await createTestApp();
    dataSource = t.get(DataSource);
    repository = t.get(AuditRepository);
    await seedAuditEvents(
      t,
      Array.from({ length: 50 }, (_, i) =>
        auditEvent(i % 3 === 0 ? null : organizationId, {
          occurredAt: new Date(Date.now() - i * 1000),
          actorUserId: i % 2 === 0 ? actor : null,
          targetId: i % 5 === 0 ? target : null,
        }),
      ),
    );
  });
  afterAll(() => t.close());
  afterEach(() => jest.restoreAllMocks());

  /** The plan of the first statement `run` sends (through DataSource.query, a query runner or pg's pool). */
  async function planOf(run: () => Promise<unknown>): Promise<string> {
    const calls: Array<[string, unknown[]]> = [];
    const query = dataSource.query.bind(dataSource);
    jest.spyOn(dataSource, 'query').mockImplementation((sql: string, parameters?: unknown) => {
      calls.push([sql, (parameters as unknown[] | undefined) ?? []]);
      return query(sql, parameters as unknown[]);
    });
    if (dataSource.options.type === 'postgres') {
      // Dialect.rows reads through pg's pool (the promise form of its query).
      const pool = (dataSource.driver as PostgresDriver).master as Pool as unknown as {
        query: (sql: string, parameters: unknown[]) => Promise<unknown>;
      };
      const poolQuery = pool.query.bind(pool);
      jest.spyOn(pool, 'query').mockImplementation((sql, parameters) => {
        calls.push([sql, parameters ?? []]);
        return poolQuery(sql, parameters);
      });
    }
    const createQueryRunner = dataSource.createQueryRunner.bind(dataSource);
    jest.spyOn(dataSource, 'createQueryRunner').mockImplementation((mode) => {
      const runner = createQueryRunner(mode);
      const runnerQuery = runner.query.bind(runner);
      jest.spyOn(runner, 'query').mockImplementation((sql: string, parameters?: unknown, structured?: boolean) => {
        calls.push([sql, (parameters as unknown[] | undefined) ?? []]);
        return runnerQuery(sql, parameters as unknown[], structured as true);
      });
      return runner;
    });
    await run();
    jest.restoreAllMocks();
    const [sql, parameters] = calls[0];
    // A sequential scan, or a bitmap scan and a sort, would hide a plan that cannot read an index in order.
    return explain(dataSource, sql, parameters, ['seqscan', 'bitmapscan']);
  }

  const cases: Array<[string, AuditEventFilters, string]> = [
    ['no filter', {}, 'audit_events_org_newest'],
    ['since and until', { since: 1_800_000_000_000_000, until: 1_900_000_000_000_000 }, 'audit_events_org_newest'],
    ['action', { action: 'api_key.revoked' }, 'audit_events_org_action'],
    ['actor', { actorUserId: actor }, 'audit_events_org_actor'],
    ['target', { targetId: target }, 'audit_events_org_target'],
    ['action and actor', { action: 'api_key.revoked', actorUserId: actor }, 'audit_events_org_actor'],
    ['actor and target', { actorUserId: actor, targetId: target }, 'audit_events_org_target'],
    [
      'every filter',
      { action: 'api_key.created', actorUserId: actor, targetId: target, since: 1, until: 2 ** 52 },
      'audit_events_org_target',
    ],
  ];

  describe.each([
    ['first page', undefined],
    ['deep page', position],
  ])('%s', (_page, after) => {
    it.each(cases)('filtered by %s: reads an index in list order, sorts nothing', async (_name, filters, index) => {
      const plan = await planOf(() => repository.findPage(organizationId, filters, after, 51));
      expect(plan).not.toMatch(/SCAN audit_events\b|Seq Scan|Bitmap/);
      if (DATABASE_KIND === 'sqlite') {
        // Told which index (INDEXED BY), read in order: no temporary B-tree for the ORDER BY.
        expect(plan).toMatch(new RegExp(`SEARCH audit_events USING INDEX ${index} \\(organization_id=\\?`));
        expect(plan).not.toMatch(/TEMP B-TREE/);
        // The position bounds the index range itself (a row-value range), not a filter over it.
        if (after !== undefined) expect(plan).toMatch(/\(occurred_at,id\)<\(\?,\?\)\)$/m);
      } else {
        expect(plan).toMatch(/Index Scan using audit_events_org_(newest|action|actor|target) /);
        expect(plan).not.toMatch(/Sort/);
        if (after !== undefined) expect(plan).toMatch(/Index Cond: .*ROW\(occurred_at, id\) < ROW\(/);
      }
    });
  });

  it("finds a page of credentials' revocations, the newest of each, by audit_events_org_target", async () => {
    const plan = await planOf(() => repository.findLatestByTarget(organizationId, 'api_key.revoked', [target, actor]));
    expect(plan).not.toMatch(/SCAN audit_events\b|Seq Scan/);
    expect(plan).toMatch(
      DATABASE_KIND === 'sqlite'
        ? /SEARCH audit_events USING INDEX audit_events_org_target \(organization_id=\? AND target_id=\?/
        : /Index Scan using audit_events_org_target /,
    );
  });

  it('finds the oldest events for retention by audit_events_occurred', async () => {
    const plan = await planOf(() => repository.deleteOlderThan(new Date('2000-01-01T00:00:00Z'), 1000));
    expect(plan).toMatch(
      DATABASE_KIND === 'sqlite'
        ? /SEARCH audit_events USING (COVERING )?INDEX audit_events_occurred \(occurred_at<\?\)/
        : /Index (Only )?Scan using audit_events_occurred/,
    );
    expect(plan).not.toMatch(/SCAN audit_events\b|Seq Scan|TEMP B-TREE|Sort/);
  });

  it('has replaced the indexes the API does not use', async () => {
    const names =
      DATABASE_KIND === 'sqlite'
        ? await dataSource.query<Array<{ name: string }>>(
            `SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'audit_events' AND sql IS NOT NULL`,
          )
        : await dataSource.query<Array<{ name: string }>>(
            `SELECT indexname AS name FROM pg_indexes WHERE tablename = 'audit_events' AND schemaname = current_schema()
             AND indexname NOT LIKE '%pkey'`,
          );
    expect(names.map((row) => row.name).sort()).toEqual([
      'audit_events_occurred',
      'audit_events_org_action',
      'audit_events_org_actor',
      'audit_events_org_newest',
      'audit_events_org_target',
    ]);
  });
});
