import { createRequire } from 'node:module';
import type BetterSqlite3 from 'better-sqlite3';

export type SqliteModuleName = 'better-sqlite3' | 'better-sqlite3-node20';

/** Node 22+ loads prebuilt better-sqlite3 13; Node 20 needs 12 (docs/adr/0019-node-24-and-complete-lock.md). */
export function sqliteModuleName(nodeVersion: string = process.versions.node): SqliteModuleName {
  return Number(nodeVersion.split('.')[0]) >= 22 ? 'better-sqlite3' : 'better-sqlite3-node20';
}

/** The better-sqlite3 module for this Node: TypeORM's `driver`, and the benchmark's direct connection. */
export function loadBetterSqlite3(): typeof BetterSqlite3 {
  const name = sqliteModuleName();
  try {
    return createRequire(__filename)(name) as typeof BetterSqlite3;
  } catch (error) {
    throw new Error(
      `${name} cannot be loaded on Node ${process.versions.node}` +
        (name === 'better-sqlite3-node20'
          ? ': on Node 20 it is compiled at install (needs make, g++, python3; then npm ci)'
          : ''),
      { cause: error },
    );
  }
}
