import { EventEmitter } from 'node:events';
import { Injectable, Logger, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { Client } from 'pg';
import { InjectConfig } from '../config/config.module';
import type { AppConfiguration } from '../config/configuration';
import { SsfRepository } from './ssf.repository';

/** How long a lost LISTEN connection waits before it connects again. */
const RECONNECT_MS = 1000;

/**
 * Wakes the long polls of this instance when an event was committed at any instance: PostgreSQL's LISTEN/NOTIFY (the
 * NOTIFY is sent by the change's own transaction, so at its commit), or in process on SQLite, whose one process is
 * the only writer (docs/revocation-feed.md#delivery).
 */
@Injectable()
export class WakeSignal implements OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger(WakeSignal.name);
  private readonly emitter = new EventEmitter().setMaxListeners(0);
  private listener: Client | undefined;
  private closed = false;
  /** The NOTIFY channel: one per schema, so that deployments (and test databases) sharing a server stay apart. */
  readonly channel: string;
  /** PostgreSQL: commits are announced by NOTIFY, which this instance hears as well; SQLite: by `wake()` in process. */
  readonly notified: boolean;

  constructor(
    private readonly events: SsfRepository,
    @InjectConfig() private readonly config: AppConfiguration,
  ) {
    const { database } = config;
    this.channel = `gatehouse_ssf_${database.type === 'postgres' ? (database.schema ?? 'public') : 'sqlite'}`;
    this.notified = database.type === 'postgres';
  }

  async onModuleInit(): Promise<void> {
    if (this.notified) await this.listen();
  }

  async onModuleDestroy(): Promise<void> {
    this.closed = true;
    await this.listener?.end().catch(() => undefined);
  }

  /** Every waiter of this instance (and, through NOTIFY, of the others: the outbox sends it). */
  wake(): void {
    this.emitter.emit('wake');
  }

  /** Calls `listener` at every wake-up of this instance (the poll hub, which reads for all its waiters at once). */
  subscribe(listener: () => void): () => void {
    this.emitter.on('wake', listener);
    return () => this.emitter.off('wake', listener);
  }

  private async listen(): Promise<void> {
    const database = this.config.database;
    if (database.type !== 'postgres' || this.closed) return;
    const client = new Client({ connectionString: database.url });
    client.on('notification', () => this.emitter.emit('wake'));
    client.on('error', (error) => {
      this.logger.warn({ err: error }, 'revocation feed LISTEN connection lost; reconnecting');
      this.reconnect(client);
    });
    try {
      await client.connect();
      await this.events.listen(client, this.channel);
      this.listener = client;
      // Whatever was committed while not listening is found by the next poll's query; wake the current ones.
      this.emitter.emit('wake');
    } catch (error) {
      this.logger.warn({ err: error }, 'revocation feed LISTEN connection failed; retrying');
      this.reconnect(client);
    }
  }

  private reconnect(client: Client): void {
    if (this.listener === client) this.listener = undefined;
    void client.end().catch(() => undefined);
    if (this.closed) return;
    setTimeout(() => void this.listen(), RECONNECT_MS).unref();
  }
}
