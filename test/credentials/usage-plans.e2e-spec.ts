import { randomUUID } from 'node:crypto';
import type { Pool } from 'pg';
import { DataSource } from 'typeorm';
import type { PostgresDriver } from 'typeorm/driver/postgres/PostgresDriver.js';
import { CredentialUsageRepository, Granularity } from '../../src/credentials/credential-usage.repository';
import type { Statement } from '../../src/database/sql';
import { explain } from '../support/query-plans';
import { createTestApp, DATABASE_KIND, TestApp } from '../support/test-app';

const NOW_MINUTE = Math.floor(Date.UTC(2026, 5, 1) / 60_000);

/**
 * Usage over time's statements read their indexes (docs/adr/0058-usage-over-time.md): a credential's series by its
 * primary key, an organization's busiest by (organization_id, minute) on both tables, the retention oldest first by
 * minute; never a scan of a table that holds every organization's month.
 */
describe(`usage over time's query plans on ${DATABASE_KIND}`, () => {
  let t: TestApp;
  let dataSource: DataSource;
  let repository: CredentialUsageRepository;
  const organizations = Array.from({ length: 4 }, () => randomUUID());
  const credentials = Array.from({ length: 40 }, () => randomUUID());

  beforeAll(async () => {
    t = await createTestApp();
    dataSource = t.get(DataSource);
    repository = t.get(CredentialUsageRepository);
    // Two days of minutes for 40 credentials in 4 organizations, enough for the planners to prefer the indexes.
    for (const table of ['credential_usage_minutes', 'credential_usage_hours']) {
      const step = table === 'credential_usage_hours' ? 60 : 15;
      const values: string[] = [];
      credentials.forEach((id, i) => {
        for (let minute = NOW_MINUTE - 2 * 1440; minute < NOW_MINUTE; minute += step) {
          values.push(`('${id}', ${minute}, 'key_exchange', 'api_key', '${organizations[i % 4]}', 3, 1)`);
        }
      });
      for (let start = 0; start < values.length; start += 2000) {
        await dataSource.query(`INSERT INTO ${table} (credential_id, minute, channel, credential_kind,
          organization_id, succeeded, refused) VALUES ${values.slice(start, start + 2000).join(', ')}`);
      }
      await dataSource.query(`${DATABASE_KIND === 'sqlite' ? 'ANALYZE' : 'VACUUM ANALYZE'} ${table}`);
    }
  });
  afterAll(() => t.close());
  afterEach(() => jest.restoreAllMocks());

  /** The plan of the first statement `run` sends (Dialect.rows: the pool on PostgreSQL, DataSource.query on SQLite). */
  async function planOf(run: () => Promise<unknown>): Promise<string> {
    const query =
      DATABASE_KIND === 'sqlite'
        ? jest.spyOn(dataSource, 'query')
        : jest.spyOn((dataSource.driver as PostgresDriver).master as Pool, 'query');
    await run();
    const [sql, parameters] = query.mock.calls[0] as unknown as [string, unknown[]];
    query.mockRestore();
    return explain(dataSource, sql, parameters, ['seqscan', 'bitmapscan']);
  }

  const noScan = DATABASE_KIND === 'sqlite' ? /SCAN credential_usage_(minutes|hours)\b/ : /Seq Scan/;

  it.each<Granularity>(['minute', 'hour', 'day'])(
    "reads a credential's %s series by its primary key",
    async (granularity) => {
      const text = await planOf(() => repository.seriesOf(credentials[0], granularity, NOW_MINUTE - 1440, NOW_MINUTE));
      expect(text).not.toMatch(noScan);
      expect(text).toMatch(
        DATABASE_KIND === 'sqlite'
          ? /USING INDEX sqlite_autoindex_credential_usage_(minutes|hours)_1 \(credential_id=\? AND minute>\? AND minute<\?\)/
          : /Index Scan using credential_usage_(minutes|hours)_pkey/,
      );
    },
  );

  it("reads an organization's busiest from (organization_id, minute) of both tables", async () => {
    const text = await planOf(() => repository.busiest(organizations[0], NOW_MINUTE - 1440 - 7, NOW_MINUTE - 11, 10));
    expect(text).not.toMatch(noScan);
    for (const table of ['credential_usage_minutes', 'credential_usage_hours']) {
      expect(text).toMatch(
        DATABASE_KIND === 'sqlite'
          ? new RegExp(
              `SEARCH ${table} USING INDEX ${table}_organization \\(organization_id=\\? AND minute>\\? AND minute<\\?\\)`,
            )
          : new RegExp(`Index Scan using ${table}_organization`),
      );
    }
  });

  it('prunes the oldest rows by minute', async () => {
    const prunes = (repository as unknown as { prunes: Record<string, Statement<{ cutoff: number; limit: number }>> })
      .prunes;
    for (const [table, statement] of Object.entries(prunes)) {
      const args = { cutoff: NOW_MINUTE - 1440, limit: 100 };
      const text = await explain(dataSource, statement.text, statement.values(args), ['seqscan', 'bitmapscan']);
      expect(text).not.toMatch(noScan);
      expect(text).toMatch(new RegExp(`credential_usage_${table}_minute`));
    }
  });
});
