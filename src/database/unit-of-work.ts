import { createHash } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type BetterSqlite3 from 'better-sqlite3';
import type { Pool, QueryResultRow } from 'pg';
import { DataSource, EntityManager } from 'typeorm';
import type { PostgresDriver } from 'typeorm/driver/postgres/PostgresDriver.js';
import type { Statement } from './sql';

/** An open transaction as repositories receive it. */
export type Transaction = EntityManager;

/** A transaction whose statements go to the driver past TypeORM's query runner (UnitOfWork.direct). */
export interface DirectTransaction {
  run<Row, Args extends object = Record<string, never>>(statement: Statement<Args>, args: Args): Promise<Row[]>;
}

export interface UnitOfWorkOptions {
  /** Same-key units run in turn, before asking the pool for a connection (docs/operations.md#transactions). */
  queueKey?: string;
}

/** SQLite has one connection per process, so every unit of work queues. */
const SQLITE_QUEUE = 'sqlite';

const settle = (): undefined => undefined;

/** Several repositories' writes in one transaction: all stored, or none (docs/operations.md#transactions). */
@Injectable()
export class UnitOfWork {
  private readonly sqlite: boolean;
  private readonly queues = new Map<string, Promise<unknown>>();
  private readonly commitCallbacks = new WeakMap<Transaction, Array<() => void>>();
  /** SQLite's statements by text, prepared once on the connection itself (direct). */
  private readonly prepared = new Map<string, BetterSqlite3.Statement>();
  private readonly sqliteDirect: DirectTransaction = {
    run: <Row, Args extends object>(statement: Statement<Args>, args: Args): Promise<Row[]> =>
      Promise.resolve(this.sqliteRun<Row>(statement.text, statement.values(args))),
  };

  /**
   * Statements committed each alone (PostgreSQL: straight to pg's pool as the hot paths' reads, no transaction around
   * them), for work that is one statement; null on SQLite, whose writes share a transaction instead (`direct`).
   */
  readonly autocommit: DirectTransaction | null;

  constructor(@InjectDataSource() private readonly dataSource: DataSource) {
    this.sqlite = dataSource.options.type !== 'postgres';
    this.autocommit = this.sqlite ? null : this.preparedOnPool();
  }

  run<T>(work: (tx: Transaction) => Promise<T>, options: UnitOfWorkOptions = {}): Promise<T> {
    if (this.sqlite) {
      return this.queued(SQLITE_QUEUE, async () => {
        await new Promise((resolve) => setImmediate(resolve));
        return this.transaction(work);
      });
    }
    const transaction = (): Promise<T> => this.transaction(work);
    return options.queueKey === undefined ? transaction() : this.queued(options.queueKey, transaction);
  }

  /**
   * A hot path's transaction past TypeORM's query runner (docs/adr/0061-code-and-refresh-cost.md): on SQLite
   * on the connection itself, in the queue every unit of work takes (so no other transaction is open on it); on
   * PostgreSQL a transaction as `run`'s. Each statement is still logged through TypeORM's logger.
   */
  direct<T>(work: (tx: DirectTransaction) => Promise<T>): Promise<T> {
    if (this.sqlite) return this.queued(SQLITE_QUEUE, () => this.sqliteTransaction(work));
    return this.transaction((manager) =>
      work({
        run: <Row, Args extends object>(statement: Statement<Args>, args: Args) =>
          manager.query<Row[]>(statement.text, statement.values(args)),
      }),
    );
  }

  /** Runs `callback` once `tx` has committed (never if it rolls back); outside a transaction, on the next turn. */
  afterCommit(tx: Transaction | undefined, callback: () => void): void {
    if (tx === undefined) {
      setImmediate(callback);
      return;
    }
    const callbacks = this.commitCallbacks.get(tx);
    if (callbacks === undefined) this.commitCallbacks.set(tx, [callback]);
    else callbacks.push(callback);
  }

  private async transaction<T>(work: (tx: Transaction) => Promise<T>): Promise<T> {
    let manager: Transaction | undefined;
    const result = await this.dataSource.transaction((tx) => {
      manager = tx;
      return work(tx);
    });
    const callbacks = manager === undefined ? undefined : this.commitCallbacks.get(manager);
    if (callbacks !== undefined) for (const callback of callbacks) callback();
    return result;
  }

  private async sqliteTransaction<T>(work: (tx: DirectTransaction) => Promise<T>): Promise<T> {
    this.sqliteRun('BEGIN TRANSACTION', []);
    try {
      const result = await work(this.sqliteDirect);
      this.sqliteRun('COMMIT', []);
      return result;
    } catch (error) {
      if (this.connection().inTransaction) this.sqliteRun('ROLLBACK', []);
      throw error;
    }
  }

  /** One statement on SQLite's connection: its rows, none for a statement that returns none. */
  private sqliteRun<Row>(text: string, values: unknown[]): Row[] {
    this.dataSource.logger.logQuery(text, values);
    let statement = this.prepared.get(text);
    if (statement === undefined) {
      statement = this.connection().prepare(text);
      this.prepared.set(text, statement);
    }
    if (statement.reader) return statement.all(...values) as Row[];
    statement.run(...values);
    return [];
  }

  /**
   * PostgreSQL's autocommit statements as named prepared statements on pg's pool: each connection parses and plans one
   * once (a code's redemption is a CTE of four parts), which took the code and refresh requests from 1,475 and 1,785 a
   * second to 2,609 and 2,791 (docs/adr/0061-code-and-refresh-cost.md). Names come from the text, one per statement.
   */
  private preparedOnPool(): DirectTransaction {
    const names = new WeakMap<object, string>();
    const pool = (): Pool => (this.dataSource.driver as PostgresDriver).master as Pool;
    return {
      run: async <Row, Args extends object>(statement: Statement<Args>, args: Args): Promise<Row[]> => {
        let name = names.get(statement);
        if (name === undefined) {
          name = `gatehouse_${createHash('sha256').update(statement.text).digest('hex').slice(0, 24)}`;
          names.set(statement, name);
        }
        const result = await pool().query<Row & QueryResultRow>({
          name,
          text: statement.text,
          values: statement.values(args),
        });
        return result.rows;
      },
    };
  }

  private connection(): BetterSqlite3.Database {
    return (this.dataSource.driver as unknown as { databaseConnection: BetterSqlite3.Database }).databaseConnection;
  }

  private queued<T>(key: string, task: () => Promise<T>): Promise<T> {
    const previous = this.queues.get(key) ?? Promise.resolve();
    const result = previous.then(task);
    const tail = result.then(settle, settle);
    this.queues.set(key, tail);
    void tail.then(() => {
      if (this.queues.get(key) === tail) this.queues.delete(key);
    });
    return result;
  }
}
