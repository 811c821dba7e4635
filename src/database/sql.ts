import type { Pool, QueryResult } from 'pg';
import type { DataSource, EntityManager } from 'typeorm';
import type { PostgresDriver } from 'typeorm/driver/postgres/PostgresDriver.js';

/** A named value of a statement, bound when it runs; `encode` turns the argument into what the driver takes. */
export class Param {
  constructor(
    readonly name: string,
    readonly encode?: (value: unknown) => unknown,
  ) {}
}

type Piece = string | Param | Sql;

/** A piece of SQL text with its parameters; `sql` writes one, `Dialect.prepare` numbers its placeholders. */
export class Sql {
  constructor(readonly pieces: readonly Piece[]) {}
}

/** The one way to write SQL here: `sql\`... ${param('id')} ...\``, with nested fragments and dialect pieces. */
export function sql(strings: TemplateStringsArray, ...values: Array<Param | Sql>): Sql {
  const pieces: Piece[] = [];
  strings.forEach((text, i) => {
    pieces.push(text);
    if (i < values.length) pieces.push(values[i]);
  });
  return new Sql(pieces);
}

export function param(name: string): Param {
  return new Param(name);
}

/** Text that is not a value (an identifier or a constant written in code), never user input. */
export function raw(text: string): Sql {
  return new Sql([text]);
}

export function join(fragments: readonly Sql[], separator: string): Sql {
  return new Sql(fragments.flatMap((fragment, i) => (i === 0 ? [fragment] : [separator, fragment])));
}

/** A statement ready to run: its text and the positional values for named arguments. */
export interface Statement<Args> {
  readonly text: string;
  values(args: Args): unknown[];
}

export type DatabaseKind = 'postgres' | 'sqlite';

/** A column of `Dialect.jsonRecords`: its name and PostgreSQL type (SQLite keeps the JSON value's text). */
export type RecordColumn = readonly [name: string, postgresType: string];

/**
 * Every difference between SQLite and PostgreSQL the repositories meet, in one object taken once from the data
 * source: repositories write one statement and never branch on the database (docs/adr/0028-one-sql-style.md).
 */
export class Dialect {
  private static readonly byDataSource = new WeakMap<DataSource, Dialect>();

  static of(dataSource: DataSource): Dialect {
    let dialect = Dialect.byDataSource.get(dataSource);
    if (dialect === undefined) {
      dialect = new Dialect(dataSource.options.type === 'postgres' ? 'postgres' : 'sqlite', dataSource);
      Dialect.byDataSource.set(dataSource, dialect);
    }
    return dialect;
  }

  private readonly postgres: boolean;
  private readonly read: <Row>(text: string, values: unknown[]) => Promise<Row[]>;

  private constructor(
    readonly kind: DatabaseKind,
    dataSource: DataSource,
  ) {
    this.postgres = kind === 'postgres';
    // The hot paths' reads go straight to pg's pool, past TypeORM's query runner (docs/adr/0010-data-access-repositories.md).
    this.read = this.postgres
      ? async <Row>(text: string, values: unknown[]): Promise<Row[]> => {
          const result: QueryResult = await ((dataSource.driver as PostgresDriver).master as Pool).query(text, values);
          return result.rows as Row[];
        }
      : <Row>(text: string, values: unknown[]) => dataSource.query<Row[]>(text, values);
  }

  /** Numbers the placeholders in order: `$n` once per name (PostgreSQL), `?` per occurrence (SQLite). */
  prepare<Args extends object = Record<string, never>>(query: Sql): Statement<Args> {
    const bound: Param[] = [];
    const numbers = new Map<string, number>();
    let text = '';
    const walk = (fragment: Sql): void => {
      for (const piece of fragment.pieces) {
        if (typeof piece === 'string') text += piece;
        else if (piece instanceof Sql) walk(piece);
        else if (!this.postgres) {
          bound.push(piece);
          text += '?';
        } else {
          let n = numbers.get(piece.name);
          if (n === undefined) {
            bound.push(piece);
            n = bound.length;
            numbers.set(piece.name, n);
          }
          text += `$${n}`;
        }
      }
    };
    walk(query);
    return {
      text,
      values: (args) => {
        const named = args as Record<string, unknown>;
        return bound.map((p) => (p.encode === undefined ? named[p.name] : p.encode(named[p.name])));
      },
    };
  }

  /** Reads rows outside a transaction, on the fastest path the driver offers. */
  rows<Row, Args extends object = Record<string, never>>(statement: Statement<Args>, args: Args): Promise<Row[]> {
    return this.read<Row>(statement.text, statement.values(args));
  }

  /** Runs the statement inside `tx`: its rows (an UPDATE's through `returning`). */
  run<Row, Args extends object = Record<string, never>>(
    tx: EntityManager,
    statement: Statement<Args>,
    args: Args,
  ): Promise<Row[]> {
    return tx.query<Row[]>(statement.text, statement.values(args));
  }

  /**
   * Runs an UPDATE or DELETE inside `tx` (the data source's manager: on its own) and returns how many rows it changed,
   * without sending them back. The drivers report that count differently (`run` gets PostgreSQL's rows and count but
   * SQLite's last row id), and SQLite cannot count a RETURNING in a CTE: a bulk delete would send every row.
   */
  async affected<Args extends object = Record<string, never>>(
    tx: EntityManager,
    statement: Statement<Args>,
    args: Args,
  ): Promise<number> {
    const runner = tx.queryRunner ?? tx.connection.createQueryRunner();
    try {
      const result = await runner.query(statement.text, statement.values(args), true);
      return result.affected ?? 0;
    } finally {
      if (runner !== tx.queryRunner) await runner.release();
    }
  }

  /** The value with a PostgreSQL type where it cannot be inferred (INSERT ... SELECT, row values); SQLite has none. */
  cast(value: Param, postgresType: string): Sql {
    return this.postgres ? sql`${value}::${raw(postgresType)}` : sql`${value}`;
  }

  /** `column` is one of the ids in the array argument `name`: one statement text whatever the list's length. */
  idIn(column: string, name: string): Sql {
    return this.postgres
      ? sql`${raw(column)} = ANY(${param(name)}::uuid[])`
      : sql`${raw(column)} IN (SELECT value FROM json_each(${new Param(name, (ids) => JSON.stringify(ids))}))`;
  }

  /** `column` is one of the strings in the array argument `name` (as `idIn`, for text that is not an id). */
  textIn(column: string, name: string): Sql {
    return this.postgres
      ? sql`${raw(column)} = ANY(${param(name)}::text[])`
      : sql`${raw(column)} IN (SELECT value FROM json_each(${new Param(name, (texts) => JSON.stringify(texts))}))`;
  }

  /** A FROM item `alias(columns)` over the array argument `name` of objects keyed by the column names. */
  jsonRecords(name: string, alias: string, columns: readonly RecordColumn[]): Sql {
    const json = new Param(name, (records) => JSON.stringify(records));
    if (this.postgres) {
      const definition = columns.map(([column, type]) => `${column} ${type}`).join(', ');
      return sql`json_to_recordset(${json}::json) AS ${raw(`${alias}(${definition})`)}`;
    }
    const selected = columns.map(([column]) => `value ->> '${column}' AS ${column}`).join(', ');
    return sql`(SELECT ${raw(selected)} FROM json_each(${json})) AS ${raw(alias)}`;
  }

  /** A timestamp column in milliseconds since the epoch, as a number (no Date made per row). */
  epochMs(column: string): Sql {
    return this.postgres
      ? raw(`round(extract(epoch FROM ${column}) * 1000)::float8`)
      : raw(`CAST(round(unixepoch(${column}, 'subsec') * 1000) AS INTEGER)`);
  }

  /** A timestamp column in microseconds since the epoch (SQLite stores milliseconds). */
  epochMicros(column: string): Sql {
    return this.postgres
      ? raw(`(extract(epoch FROM ${column}) * 1000000)::int8`)
      : raw(`CAST(round(unixepoch(${column}, 'subsec') * 1000) AS INTEGER) * 1000`);
  }

  /**
   * The table, read through `index` on SQLite, which has no statistics to choose it; PostgreSQL's planner chooses
   * (the query-plan tests check both).
   */
  table(name: string, index: string, alias?: string): Sql {
    const table = alias === undefined ? name : `${name} ${alias}`;
    return raw(this.postgres ? table : `${table} INDEXED BY ${index}`);
  }

  /** An UPDATE or DELETE ... RETURNING as a statement whose rows TypeORM returns on both drivers (a CTE on PostgreSQL). */
  returning(statement: Sql, columns: string): Sql {
    return this.postgres ? sql`WITH changed AS (${statement}) SELECT ${raw(columns)} FROM changed` : statement;
  }

  /** Rows a concurrent transaction holds are skipped, not waited for (PostgreSQL; SQLite has one writer). */
  get skipLocked(): Sql {
    return raw(this.postgres ? 'FOR UPDATE SKIP LOCKED' : '');
  }

  /** The rows read are held until the transaction ends: a concurrent UPDATE or DELETE of them waits (PostgreSQL). */
  get forShare(): Sql {
    return raw(this.postgres ? 'FOR SHARE' : '');
  }

  /**
   * A transaction-scoped lock on the key (class, text) where the database has row-level concurrency; null on SQLite,
   * whose writers already run one at a time.
   */
  transactionLock(lockClass: number, key: Sql): Sql | null {
    return this.postgres ? sql`SELECT pg_advisory_xact_lock(${raw(String(lockClass))}, hashtext(${key}))` : null;
  }

  /** A notification to every session listening on the channel, sent at commit (PostgreSQL); null on SQLite. */
  notify(channel: Param): Sql | null {
    return this.postgres ? sql`SELECT pg_notify(${channel}, '')` : null;
  }

  /** A time bound as stored: PostgreSQL gets the exact microsecond; SQLite's ISO text, rounded up to the millisecond. */
  instant(micros: number): string {
    return this.postgres ? isoMicros(micros) : isoMillisCeil(micros);
  }
}

/** Exact, for PostgreSQL's timestamptz. */
export function isoMicros(micros: number): string {
  const ms = Math.floor(micros / 1000);
  const rest = micros - ms * 1000;
  return `${new Date(ms).toISOString().slice(0, -1)}${String(rest).padStart(3, '0')}Z`;
}

/** SQLite stores toISOString text; rounding up to the ms selects the same values as the exact instant. */
export function isoMillisCeil(micros: number): string {
  return new Date(Math.ceil(micros / 1000)).toISOString();
}
