import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { AppError, invalidArgument } from '../common/errors';
import { UUID } from '../common/uuid';
import { InjectConfig } from '../config/config.module';
import type { AppConfiguration } from '../config/configuration';
import { UnitOfWork } from '../database/unit-of-work';
import type { AuthenticatedResourceServer } from '../resource-servers/resource-servers.service';
import { SsfStream } from './ssf-stream.entity';
import { SsfStreamsRepository } from './ssf-streams.repository';
import { SsfRepository } from './ssf.repository';

/** Instance streams one resource server may have: a leaking client cannot grow every event's fan-out without bound. */
export const MAX_INSTANCE_STREAMS = 1000;
/** How often the retention job deletes idle streams: a refused creation is told to come back after one run. */
export const REAP_INTERVAL_MS = 10 * 60 * 1000;
/** A stream's last poll is written at most this often. */
const POLLED_PRECISION_MS = 60 * 1000;

export const STREAM_NOT_FOUND = 'stream not found';

const streamNotFound = (): AppError => new AppError('stream_not_found', { message: STREAM_NOT_FOUND });

/** A stream id as given (a query or path parameter): a UUID in any case, or nothing of ours. */
function streamId(given: string): string | null {
  const id = given.toLowerCase();
  return UUID.test(id) ? id : null;
}

/**
 * Instance streams (SSF 1.0 stream management, docs/adr/0031-revocation-feed-in-production.md): made by a verifier
 * instance with its resource server's credentials, polled at their own endpoint, deleted on request or when idle.
 */
@Injectable()
export class SsfStreamsService {
  private readonly idleMs: number;

  constructor(
    private readonly streams: SsfStreamsRepository,
    private readonly events: SsfRepository,
    private readonly unitOfWork: UnitOfWork,
    @InjectConfig() config: AppConfiguration,
  ) {
    this.idleMs = config.ssf.streamIdleSeconds * 1000;
  }

  /** A new stream of the caller's; 429 past MAX_INSTANCE_STREAMS. */
  async create(server: AuthenticatedResourceServer, description: string | null, now = new Date()): Promise<SsfStream> {
    const stream: SsfStream = {
      id: randomUUID(),
      resourceServerId: server.id,
      description,
      createdAt: now,
      lastPolledAt: now,
    };
    const stored = await this.unitOfWork.run((tx) => this.streams.insert(stream, MAX_INSTANCE_STREAMS, tx));
    if (!stored) {
      throw new AppError('too_many_streams', {
        headers: { 'Retry-After': String(REAP_INTERVAL_MS / 1000) },
      });
    }
    return stream;
  }

  /** The caller's instance stream with this id; 404 for another's, an unknown one or a malformed id. */
  async find(server: AuthenticatedResourceServer, id: string): Promise<SsfStream> {
    const known = streamId(id);
    const stream = known === null ? null : await this.streams.find(known, server.id);
    if (stream === null) throw streamNotFound();
    return stream;
  }

  /** The stream a poll reads, its poll recorded (at most once a minute) so that it does not count as idle. */
  async polled(server: AuthenticatedResourceServer, id: string, now = new Date()): Promise<SsfStream> {
    const stream = await this.find(server, id);
    const before = new Date(now.getTime() - POLLED_PRECISION_MS);
    if (stream.lastPolledAt < before) await this.streams.markPolled(stream.id, now, before);
    return stream;
  }

  /** Deletes the caller's stream and its deliveries; the default stream lives as long as its resource server. */
  async delete(server: AuthenticatedResourceServer, id: string): Promise<void> {
    if (id.toLowerCase() === server.id) throw invalidArgument();
    const known = streamId(id);
    const deleted =
      known !== null &&
      (await this.unitOfWork.run(async (tx) => {
        if (!(await this.streams.delete(known, server.id, tx))) return false;
        await this.events.deleteDeliveriesOf([known], tx);
        return true;
      }));
    if (!deleted) throw streamNotFound();
  }

  /** Deletes the streams not polled for SSF_STREAM_IDLE_SECONDS before `now`, with their deliveries. */
  pruneIdle(now: Date): Promise<number> {
    const before = new Date(now.getTime() - this.idleMs);
    return this.unitOfWork.run(async (tx) => {
      const ids = await this.streams.deleteIdle(before, tx);
      await this.events.deleteDeliveriesOf(ids, tx);
      return ids.length;
    });
  }
}
