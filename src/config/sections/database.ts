import { isAbsolute, resolve } from 'node:path';
import type { Reader } from '../reader';

export type DatabaseConfig =
  | { type: 'sqlite'; path: string }
  | {
      type: 'postgres';
      url: string;
      schema: string | undefined;
      poolSize: number;
      connectTimeoutMs: number;
      statementTimeoutMs: number;
    };

/** DATABASE_URL (sqlite: by default, in DATA_DIR) and the PostgreSQL pool's settings. */
export function parseDatabase(r: Reader, dataDir: string): DatabaseConfig {
  const url = r.string('DATABASE_URL', `sqlite:${resolve(dataDir, 'gatehouse.sqlite')}`)!;
  if (url.startsWith('sqlite:')) {
    const file = url.slice('sqlite:'.length).replace(/^\/\/(?=\/)/, '');
    if (file === '') r.problem('DATABASE_URL sqlite: needs a file path, e.g. sqlite:./data/gatehouse.sqlite');
    const path = file === ':memory:' || isAbsolute(file) ? file : resolve(file);
    return { type: 'sqlite', path };
  }
  if (url.startsWith('postgres://') || url.startsWith('postgresql://')) {
    try {
      new URL(url);
    } catch {
      r.problem('DATABASE_URL is not a valid postgres:// URL');
    }
    const schema = r.string('DATABASE_SCHEMA');
    if (schema !== undefined && !/^[a-z_][a-z0-9_]{0,62}$/.test(schema)) {
      r.problem('DATABASE_SCHEMA must be a lower-case SQL identifier');
    }
    return {
      type: 'postgres',
      url,
      schema,
      poolSize: r.int('DATABASE_POOL_SIZE', 10, 1, 200),
      // 1 s each: a request fails with 503 within 2 s when PostgreSQL is down or silent (data-source-options.ts).
      connectTimeoutMs: r.int('DATABASE_CONNECT_TIMEOUT_MS', 1000, 100, 60000),
      statementTimeoutMs: r.int('DATABASE_STATEMENT_TIMEOUT_MS', 1000, 100, 600000),
    };
  }
  r.problem('DATABASE_URL must start with sqlite: or postgres://');
  return { type: 'sqlite', path: ':memory:' };
}
