import { Injectable } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { Pace, ScheduledPacedJob } from '../../database/scheduled-paced-job';
import { RegisteredClients } from './registered-clients.service';

/** Clients one statement finds at most: each is removed in a transaction of its own, with its grants. */
const IDLE_SWEEP_BATCH_SIZE = 100;

/**
 * Removes dynamically registered clients idle past OAUTH_DYNAMIC_CLIENT_IDLE_DAYS, at start and every hour, with their
 * grants (docs/mcp.md#dynamic-client-registration), paced as the retentions are (database/scheduled-paced-job.ts).
 * Until then such a client is refused at use.
 */
@Injectable()
export class IdleClientSweep extends ScheduledPacedJob {
  constructor(
    private readonly clients: RegisteredClients,
    adapterHost: HttpAdapterHost,
  ) {
    super(
      adapterHost,
      { job: 'idle client sweep', done: 'idle dynamically registered clients removed' },
      IDLE_SWEEP_BATCH_SIZE,
    );
  }

  /** How many were removed; never rejects (the next run retries). Joins a run in progress. */
  sweep(now = new Date()): Promise<number> {
    return this.start({ now });
  }

  protected async work(now: Date, pace: Pace): Promise<void> {
    await pace((size) => this.clients.removeIdle(now, size));
  }
}
