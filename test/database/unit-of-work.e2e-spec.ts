import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { UnitOfWork } from '../../src/database/unit-of-work';
import { createTestApp, DATABASE_KIND, TestApp } from '../support/test-app';

/**
 * A unit of work is isolated from the rest of the process (docs/adr/0016-transactions-through-unit-of-work.md).
 * On SQLite the process has one connection, and a plain TypeORM transaction on it takes in every
 * statement other requests send while it is open, and nests a concurrent transaction as a savepoint;
 * both cases fail with `dataSource.transaction` in place of UnitOfWork. On PostgreSQL each
 * transaction has a connection of its own.
 */
describe(`UnitOfWork on ${DATABASE_KIND}`, () => {
  let t: TestApp;
  let dataSource: DataSource;
  let unitOfWork: UnitOfWork;
  beforeAll(async () => {
    t = await createTestApp();
    dataSource = t.get(DataSource);
    unitOfWork = t.get(UnitOfWork);
  });
  afterAll(() => t.close());

  const insertOrganization = (runner: Pick<DataSource, 'query'>, name: string): Promise<unknown> =>
    runner.query(
      DATABASE_KIND === 'sqlite'
        ? 'INSERT INTO organizations (id, name, created_at, updated_at) VALUES (?, ?, ?, ?)'
        : 'INSERT INTO organizations (id, name, created_at, updated_at) VALUES ($1, $2, $3, $4)',
      [randomUUID(), name, new Date().toISOString(), new Date().toISOString()],
    );
  /** Which of `names` are stored, sorted. */
  const stored = async (names: string[]): Promise<string[]> =>
    (await dataSource.query<Array<{ name: string }>>('SELECT name FROM organizations'))
      .map((row) => row.name)
      .filter((name) => names.includes(name))
      .sort();
  const hops = async (n: number): Promise<void> => {
    for (let i = 0; i < n; i += 1) await Promise.resolve();
  };

  it('a unit of work that fails takes no write of another request with it', async () => {
    const failing = unitOfWork.run(async (tx) => {
      await insertOrganization(tx, 'uow-a1');
      await insertOrganization(tx, 'uow-a2');
      await tx.query('SELECT 1');
      throw new Error('the unit of work fails');
    });
    // Another request's writes, sent while the unit of work is under way (in the same event-loop turn).
    const others = [2, 5, 10, 20, 40, 80].map(async (n, i) => {
      await hops(n);
      await insertOrganization(dataSource, `uow-b${i}`);
      return `uow-b${i}`;
    });
    const [outcome, ...written] = await Promise.allSettled([failing, ...others]);
    expect(outcome.status).toBe('rejected');
    expect(written.map((result) => result.status)).toEqual(Array(others.length).fill('fulfilled'));
    const names = (await Promise.all(others)).sort();
    expect(await stored(['uow-a1', 'uow-a2', ...names])).toEqual(names);
  });

  it('overlapping units of work: the failing one stores nothing, the other everything', async () => {
    const failing = unitOfWork.run(async (tx) => {
      await insertOrganization(tx, 'uow-c1');
      await insertOrganization(tx, 'uow-c2');
      throw new Error('the unit of work fails');
    });
    const succeeding = unitOfWork.run(async (tx) => {
      await insertOrganization(tx, 'uow-d1');
      await insertOrganization(tx, 'uow-d2');
    });
    const outcomes = await Promise.allSettled([failing, succeeding]);
    expect(outcomes.map((outcome) => outcome.status)).toEqual(['rejected', 'fulfilled']);
    expect(await stored(['uow-c1', 'uow-c2', 'uow-d1', 'uow-d2'])).toEqual(['uow-d1', 'uow-d2']);
  });

  it('units of work with one queue key run one after another', async () => {
    const events: string[] = [];
    const unit = (name: string, key?: string) =>
      unitOfWork.run(
        async (tx) => {
          events.push(`${name} start`);
          await insertOrganization(tx, `uow-${name}`);
          await tx.query('SELECT 1');
          events.push(`${name} end`);
        },
        key === undefined ? {} : { queueKey: key },
      );
    await Promise.all([unit('e1', 'k'), unit('e2', 'k'), unit('e3', 'k')]);
    expect(events).toEqual(['e1 start', 'e1 end', 'e2 start', 'e2 end', 'e3 start', 'e3 end']);
    expect(await stored(['uow-e1', 'uow-e2', 'uow-e3'])).toEqual(['uow-e1', 'uow-e2', 'uow-e3']);
  });
});
