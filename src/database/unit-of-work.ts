import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';

/** An open transaction as repositories receive it. */
export type Transaction = EntityManager;

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
