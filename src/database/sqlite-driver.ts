import { createRequire } from 'node:module';
import type BetterSqlite3 from 'better-sqlite3';

export type SqliteModuleName = 'better-sqlite3' | 'better-sqlite3-node20';

/**
 * Which better-sqlite3 this Node loads (docs/adr/0019-node-24-and-complete-lock.md): 13, a Node-API module whose npm
 * package carries prebuilt binaries, on Node 22 and later; on Node 20, 12 (the optional dependency
 * `better-sqlite3-node20`), compiled at install.
 */
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
