import type { DataSource } from 'typeorm';

interface SqliteStatement {
  all(...parameters: unknown[]): unknown[];
  run(...parameters: unknown[]): unknown;
}
interface SqliteDatabase {
  prepare(text: string): SqliteStatement;
}
interface PgPool {
  query(config: { name: string; text: string; values: unknown[] }): Promise<{ rows: unknown[] }>;
}

let statementCount = 0;

/**
 * A constant SQL statement for a hot path (DESIGN.md section 5): POST /v1/token and every Bearer
 * request run a few of these. Written once with PostgreSQL's `$1..$n` placeholders (each used once,
 * in order). It goes to the driver TypeORM already holds, without building a query or a query
 * runner per call: on SQLite a better-sqlite3 statement prepared once (placeholders become `?`),
 * on PostgreSQL a named prepared statement on the pool (parsed once per connection). Rows come
 * back raw: snake_case columns, timestamps as Date (PostgreSQL) or ISO text (SQLite). Errors are
 * the driver's own; the exception filter classifies them (src/common/database-errors.ts).
 */
export class Statement<Row> {
  private readonly postgres: boolean;
  private readonly name = `gatehouse_${(statementCount += 1)}`;
  private prepared: SqliteStatement | undefined;

  constructor(
    private readonly dataSource: DataSource,
    private readonly text: string,
  ) {
    this.postgres = dataSource.options.type === 'postgres';
    if (!this.postgres) this.text = text.replace(/\$\d+/g, '?');
  }

  async rows(parameters: unknown[]): Promise<Row[]> {
    if (this.postgres) return (await this.pool().query(this.config(parameters))).rows as Row[];
    return this.sqlite().all(...parameters) as Row[];
  }

  async first(parameters: unknown[]): Promise<Row | undefined> {
    return (await this.rows(parameters))[0];
  }

  /** Runs a statement that returns no rows (an UPDATE). */
  async execute(parameters: unknown[]): Promise<void> {
    if (this.postgres) await this.pool().query(this.config(parameters));
    else this.sqlite().run(...parameters);
  }

  private config(values: unknown[]): { name: string; text: string; values: unknown[] } {
    return { name: this.name, text: this.text, values };
  }

  private pool(): PgPool {
    return (this.dataSource.driver as unknown as { master: PgPool }).master;
  }

  private sqlite(): SqliteStatement {
    this.prepared ??= (
      this.dataSource.driver as unknown as { databaseConnection: SqliteDatabase }
    ).databaseConnection.prepare(this.text);
    return this.prepared;
  }
}

/** A timestamp column as either database returns it. */
export function toDate(value: Date | string): Date {
  return value instanceof Date ? value : new Date(value);
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Most ids one batched query asks for; a larger batch is sent as several queries. */
const MAX_BATCH = 256;

interface Waiter<Row> {
  resolve(row: Row | undefined): void;
  reject(error: unknown): void;
}

/**
 * A hot-path lookup of one row by its UUID primary key (DESIGN.md section 5).
 * - PostgreSQL: the lookups that requests ask for while the event loop serves one batch of ready
 *   sockets are sent as one `= ANY($1::uuid[])` query when that batch is done (setImmediate), and
 *   each request gets its row: every query is a network round trip whose system calls and protocol
 *   work cost the event loop more than the query costs the database (about 50 µs a query on the
 *   2-core machine). No request waits on a timer, and every lookup is sent after the request asked
 *   for it, so it reads the database as it is then: a revocation that has returned is seen by every
 *   later request.
 * - SQLite: one prepared statement per lookup, on the application's connection.
 * `select` is a statement without its WHERE clause; `idColumn` names the key (e.g. `k.id`) and the
 * rows must carry it as `id`.
 */
export class IdLookup<Row extends { id: string }> {
  private readonly single: Statement<Row> | undefined;
  private readonly batched: ((ids: string[]) => Promise<Row[]>) | undefined;
  /** Lookups waiting for the next query; a flush is scheduled whenever this is not empty. */
  private pending = new Map<string, Array<Waiter<Row>>>();

  constructor(dataSource: DataSource, select: string, idColumn: string) {
    if (dataSource.options.type === 'postgres') {
      const statement = new Statement<Row>(dataSource, `${select} WHERE ${idColumn} = ANY($1::uuid[])`);
      this.batched = (ids) => statement.rows([ids]);
      return;
    }
    this.single = new Statement(dataSource, `${select} WHERE ${idColumn} = $1`);
  }

  /** The row with this id, or undefined (also for a value that is not a UUID). */
  find(id: string): Promise<Row | undefined> {
    if (this.single !== undefined) return this.single.first([id]);
    if (!UUID.test(id)) return Promise.resolve(undefined);
    const key = id.toLowerCase();
    return new Promise((resolve, reject) => {
      if (this.pending.size === 0) setImmediate(() => this.flush());
      const waiters = this.pending.get(key);
      if (waiters === undefined) this.pending.set(key, [{ resolve, reject }]);
      else waiters.push({ resolve, reject });
    });
  }

  private flush(): void {
    const batch = this.pending;
    this.pending = new Map();
    const ids = [...batch.keys()];
    for (let start = 0; start < ids.length; start += MAX_BATCH) {
      const chunk = ids.slice(start, start + MAX_BATCH);
      const settle = (answer: (waiter: Waiter<Row>, id: string) => void): void => {
        for (const id of chunk) for (const waiter of batch.get(id)!) answer(waiter, id);
      };
      this.batched!(chunk).then(
        (rows) => {
          const byId = new Map(rows.map((row) => [row.id.toLowerCase(), row]));
          settle((waiter, id) => waiter.resolve(byId.get(id)));
        },
        (error: unknown) => settle((waiter) => waiter.reject(error)),
      );
    }
  }
}
