import type { DataSource } from 'typeorm';

interface SqliteStatement {
  all(...parameters: unknown[]): unknown[];
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
    const driver = this.dataSource.driver as unknown as { master?: PgPool; databaseConnection?: SqliteDatabase };
    if (this.postgres) {
      const result = await driver.master!.query({ name: this.name, text: this.text, values: parameters });
      return result.rows as Row[];
    }
    this.prepared ??= driver.databaseConnection!.prepare(this.text);
    return this.prepared.all(...parameters) as Row[];
  }

  async first(parameters: unknown[]): Promise<Row | undefined> {
    return (await this.rows(parameters))[0];
  }
}

/** A timestamp column as either database returns it. */
export function toDate(value: Date | string): Date {
  return value instanceof Date ? value : new Date(value);
}
