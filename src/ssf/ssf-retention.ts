import { Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { InjectConfig } from '../config/config.module';
import type { AppConfiguration } from '../config/configuration';
import { SsfRepository } from './ssf.repository';

const INTERVAL_MS = 60 * 60 * 1000;
const DAY_MS = 24 * 60 * 60 * 1000;

/** Deletes events and deliveries older than SSF_EVENT_RETENTION_DAYS, hourly, in the server only. */
@Injectable()
export class SsfRetention implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger(SsfRetention.name);
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly events: SsfRepository,
    @InjectConfig() private readonly config: AppConfiguration,
    private readonly adapterHost: HttpAdapterHost,
  ) {}

  onApplicationBootstrap(): void {
    if (this.adapterHost.httpAdapter == null) return;
    this.timer = setInterval(() => void this.prune(), INTERVAL_MS);
    this.timer.unref();
    void this.prune();
  }

  onModuleDestroy(): void {
    clearInterval(this.timer);
  }

  async prune(now = new Date()): Promise<number> {
    try {
      const cutoff = new Date(now.getTime() - this.config.ssf.eventRetentionDays * DAY_MS);
      return await this.events.deleteOlderThan(cutoff);
    } catch (error) {
      this.logger.warn({ err: error }, 'pruning the revocation feed failed; retrying in an hour');
      return 0;
    }
  }
}
