import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';

/**
 * An open database transaction, as repositories receive it: a write method that takes one runs its statement inside it
 * (TypeORM's EntityManager bound to the transaction's connection).
 */
export type Transaction = EntityManager;

export interface UnitOfWorkOptions {
  /**
   * Units of work with the same key run one after another on this instance, each before the next asks the pool for a
   * connection (docs/operations.md#transactions).
   */
  queueKey?: string;
}

/** The queue every unit of work joins on SQLite (one connection per process). */
const SQLITE_QUEUE = 'sqlite';

const settle = (): undefined => undefined;

/**
 * Runs several repositories' writes in one transaction: all of them are stored, or none
 * (docs/operations.md#transactions).
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
