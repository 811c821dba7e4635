import { Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { InjectConfig } from '../config/config.module';
import type { AppConfiguration } from '../config/configuration';
import { SsfRepository } from './ssf.repository';
import { REAP_INTERVAL_MS, SsfStreamsService } from './ssf-streams.service';

const DAY_MS = 24 * 60 * 60 * 1000;

/**
 * Every 10 minutes, in the server only: deletes events and deliveries older than SSF_EVENT_RETENTION_DAYS, instance
 * streams idle for SSF_STREAM_IDLE_SECONDS with their deliveries, and the deliveries of streams that are gone.
 */
@Injectable()
export class SsfRetention implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger(SsfRetention.name);
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly events: SsfRepository,
    private readonly streams: SsfStreamsService,
    @InjectConfig() private readonly config: AppConfiguration,
    private readonly adapterHost: HttpAdapterHost,
  ) {}

  onApplicationBootstrap(): void {
    if (this.adapterHost.httpAdapter == null) return;
    this.timer = setInterval(() => void this.prune(), REAP_INTERVAL_MS);
    this.timer.unref();
    void this.prune();
  }

  onModuleDestroy(): void {
    clearInterval(this.timer);
  }

  /** Deliveries deleted for their age or because their stream is gone (those of idle streams are not counted). */
  async prune(now = new Date()): Promise<number> {
    try {
      const cutoff = new Date(now.getTime() - this.config.ssf.eventRetentionDays * DAY_MS);
      const old = await this.events.deleteOlderThan(cutoff);
      const idle = await this.streams.pruneIdle(now);
      if (idle > 0) this.logger.log({ streams: idle }, 'deleted idle revocation feed streams');
      return old + (await this.events.deleteOrphans());
    } catch (error) {
      this.logger.warn({ err: error }, 'pruning the revocation feed failed; retrying in 10 minutes');
      return 0;
    }
  }
}
