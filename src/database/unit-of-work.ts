import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';

/**
 * An open database transaction, as repositories receive it: a write method that takes one runs its
 * statement inside it (TypeORM's EntityManager bound to the transaction's connection). Services pass
 * it along and never use it themselves: the SQL stays in the repositories.
 */
export type Transaction = EntityManager;

export interface UnitOfWorkOptions {
  /**
   * Units of work with the same key run one after another on this instance, each before the next
   * asks the pool for a connection (docs/operations.md#transactions). For work that takes a
   * database lock per key: a burst of it then waits here, not on the lock while holding pooled
   * connections that other requests need.
   */
  queueKey?: string;
}

/** The queue every unit of work joins on SQLite (one connection per process). */
const SQLITE_QUEUE = 'sqlite';

const settle = (): undefined => undefined;

/**
 * Runs several repositories' writes in one transaction: all of them are stored, or none
 * (docs/operations.md#transactions). `work` runs database statements only (no provider call, no
 * other I/O): a transaction stays open for as short a time as possible.
 *
 * PostgreSQL: TypeORM's `DataSource.transaction` on a pooled connection of its own (READ COMMITTED).
 *
 * SQLite: the process has one connection, and TypeORM's `transaction` on it is not isolated from the
 * rest of the process. Every other statement issued while it is open joins it (and is rolled back
 * with it), and a second `transaction` opened meanwhile becomes a savepoint of the first. So units of
 * work run one at a time, and each starts from a fresh event-loop callback (setImmediate): its
 * statements run synchronously in better-sqlite3, TypeORM's awaits between them are promise
 * continuations, so BEGIN to COMMIT happens within that one callback, in which no other request's
 * code runs.
 */
@Injectable()
export class UnitOfWork {
  private readonly sqlite: boolean;
  private readonly queues = new Map<string, Promise<unknown>>();

  constructor(@InjectDataSource() private readonly dataSource: DataSource) {
    this.sqlite = dataSource.options.type !== 'postgres';
  }

  run<T>(work: (tx: Transaction) => Promise<T>, options: UnitOfWorkOptions = {}): Promise<T> {
    if (this.sqlite) {
      return this.queued(SQLITE_QUEUE, async () => {
        await new Promise((resolve) => setImmediate(resolve));
        return this.dataSource.transaction(work);
      });
    }
    const transaction = (): Promise<T> => this.dataSource.transaction(work);
    return options.queueKey === undefined ? transaction() : this.queued(options.queueKey, transaction);
  }

  /** Runs `task` after every task queued before it under `key` has settled. */
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
