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
  private readonly commitCallbacks = new WeakMap<Transaction, Array<() => void>>();

  constructor(@InjectDataSource() private readonly dataSource: DataSource) {
    this.sqlite = dataSource.options.type !== 'postgres';
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
