import { Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { RegisteredClients } from './registered-clients.service';

export const IDLE_SWEEP_INTERVAL_MS = 60 * 60 * 1000;

/**
 * Removes dynamically registered clients idle past OAUTH_DYNAMIC_CLIENT_IDLE_DAYS, at start and every hour, with their
 * grants (docs/mcp.md#dynamic-client-registration). Until then such a client is refused at use.
 */
@Injectable()
export class IdleClientSweep implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger(IdleClientSweep.name);
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<number> | undefined;

  constructor(
    private readonly clients: RegisteredClients,
    private readonly adapterHost: HttpAdapterHost,
  ) {}

  /** In the server only: the admin CLI's application context (no HTTP adapter) leaves it to the server. */
  onApplicationBootstrap(): void {
    if (this.adapterHost.httpAdapter == null) return;
    this.timer = setInterval(() => void this.sweep(), IDLE_SWEEP_INTERVAL_MS);
    this.timer.unref();
    void this.sweep();
  }

  async onModuleDestroy(): Promise<void> {
    clearInterval(this.timer);
    await this.running;
  }

  /** How many were removed; never rejects (the next run retries). Joins a run in progress. */
  sweep(now = new Date()): Promise<number> {
    if (this.running !== undefined) return this.running;
    const run = this.clients
      .removeIdle(now)
      .then(
        (removed) => {
          if (removed > 0) this.logger.log({ removed }, 'idle dynamically registered clients removed');
          return removed;
        },
        (error: unknown) => {
          this.logger.warn(
            { err: error },
            'removing idle dynamically registered clients failed; retried within the hour',
          );
          return 0;
        },
      )
      .finally(() => {
        this.running = undefined;
      });
    this.running = run;
    return run;
  }
}
