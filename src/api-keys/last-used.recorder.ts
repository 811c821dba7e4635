import { Injectable, Logger, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { Statement } from '../database/statement';
import { InjectConfig } from '../config/config.module';
import type { AppConfiguration } from '../config/configuration';

/** Keys one UPDATE statement writes at most. */
const CHUNK = 500;

/**
 * `last_used_at` without a write on every exchange (DESIGN.md section 5): uses are collected in
 * memory and written every API_KEY_LAST_USED_FLUSH_MS (default 1 s), and once more at shutdown, by
 * one UPDATE statement per 500 keys (a thousand clients exchanging every second cost two
 * statements a second, not a thousand). Reads served by this instance see its pending values at
 * once; other instances see them after the next flush. A write never moves the timestamp backwards.
 */
@Injectable()
export class LastUsedRecorder implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger(LastUsedRecorder.name);
  private pending = new Map<string, Date>();
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> = Promise.resolve();
  private readonly update: Statement<never>;
  private readonly postgres: boolean;

  constructor(
    @InjectDataSource() dataSource: DataSource,
    @InjectConfig() private readonly config: AppConfiguration,
  ) {
    this.postgres = dataSource.options.type === 'postgres';
    // One parameter pair either way: ids and times as two arrays (PostgreSQL), or one JSON array of
    // [id, time] pairs (SQLite, whose timestamps are ISO-8601 text and compare as text).
    this.update = new Statement(
      dataSource,
      this.postgres
        ? `UPDATE api_keys AS k SET last_used_at = u.at
           FROM unnest($1::uuid[], $2::timestamptz[]) AS u(id, at)
           WHERE k.id = u.id AND (k.last_used_at IS NULL OR k.last_used_at < u.at)`
        : `UPDATE api_keys SET last_used_at = u.at
           FROM (SELECT value ->> 0 AS id, value ->> 1 AS at FROM json_each($1)) AS u
           WHERE api_keys.id = u.id AND (api_keys.last_used_at IS NULL OR api_keys.last_used_at < u.at)`,
    );
  }

  onModuleInit(): void {
    this.timer = setInterval(() => void this.flush(), this.config.apiKeys.lastUsedFlushMs);
    this.timer.unref();
  }

  async onApplicationShutdown(): Promise<void> {
    clearInterval(this.timer);
    await this.flush();
  }

  record(keyId: string, at: Date): void {
    this.pending.set(keyId, at);
  }

  /** The newest use this instance knows of and has not written yet. */
  pendingFor(keyId: string): Date | undefined {
    return this.pending.get(keyId);
  }

  flush(): Promise<void> {
    this.flushing = this.flushing.then(() => this.writePending());
    return this.flushing;
  }

  private async writePending(): Promise<void> {
    if (this.pending.size === 0) return;
    const batch = this.pending;
    this.pending = new Map();
    const uses = [...batch];
    try {
      for (let start = 0; start < uses.length; start += CHUNK) {
        const chunk = uses.slice(start, start + CHUNK);
        await this.update.execute(
          this.postgres
            ? [chunk.map(([id]) => id), chunk.map(([, at]) => at.toISOString())]
            : [JSON.stringify(chunk.map(([id, at]) => [id, at.toISOString()]))],
        );
      }
    } catch (error) {
      // Keep what could not be written for the next round, unless a newer use replaced it.
      for (const [id, at] of batch) if (!this.pending.has(id)) this.pending.set(id, at);
      this.logger.warn({ err: error, keys: batch.size }, 'could not write last_used_at; will retry');
    }
  }
}
