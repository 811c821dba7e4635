import { loadBetterSqlite3, sqliteModuleName } from './sqlite-driver';

/** docs/adr/0019-node-24-and-complete-lock.md: one better-sqlite3 per Node line. */
describe('sqliteModuleName', () => {
  it.each([
    ['20.19.0', 'better-sqlite3-node20'],
    ['20.20.2', 'better-sqlite3-node20'],
    ['22.12.0', 'better-sqlite3'],
    ['24.21.0', 'better-sqlite3'],
    ['26.0.0', 'better-sqlite3'],
  ])('Node %s loads %s', (version, name) => {
    expect(sqliteModuleName(version)).toBe(name);
  });
});

describe('loadBetterSqlite3', () => {
  it("loads the running Node's module and opens a database with it", () => {
    const Database = loadBetterSqlite3();
    const db = new Database(':memory:');
    try {
      expect(db.prepare('select sqlite_version() as version').get()).toEqual({
        version: expect.stringMatching(/^3\.\d+\.\d+$/),
      });
    } finally {
      db.close();
    }
  });

  it('survives the statements of a busy process being garbage-collected', () => {
    // 12 compiled against Node 24.19+ headers aborted the whole process here (docs/adr/0019).
    const Database = loadBetterSqlite3();
    const db = new Database(':memory:');
    try {
      let sum = 0;
      for (let i = 0; i < 100_000; i++) sum += (db.prepare(`select ${i % 100} as n`).get() as { n: number }).n;
      expect(sum).toBe(4_950_000);
    } finally {
      db.close();
    }
  });
});
