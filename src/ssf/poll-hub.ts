import { Injectable, Logger, OnModuleDestroy } from '@nestjs/common';
import { ShutdownState } from '../common/shutdown.state';
import { InjectConfig } from '../config/config.module';
import type { AppConfiguration } from '../config/configuration';
import { PendingSet, SsfRepository } from './ssf.repository';
import { WakeSignal } from './wake-signal';

/** How many waiters a wake-up answers before it lets other work of the event loop run. */
const SETTLE_SLICE = 64;

/** A long poll waiting at this instance: `settle` answers it once, and removes it. */
interface Waiter {
  readonly streamId: string;
  /** How many pending SETs it takes (its maxEvents + 1, to tell moreAvailable). */
  readonly limit: number;
  settle(sets: PendingSet[]): void;
}

/** A registered long poll: its answer (the SETs a wake-up found, or none at the end), and leaving early. */
export interface Wait {
  readonly answer: Promise<PendingSet[]>;
  leave(): void;
}

/**
 * The long polls waiting at this instance (docs/adr/0031-revocation-feed-in-production.md): a wake-up runs one read
 * for every waiting stream, not one per waiter, and answers the waiters of the streams that have something. At most
 * SSF_MAX_WAITING_POLLS wait per stream; the drain at shutdown answers them all at once.
 */
@Injectable()
export class PollHub implements OnModuleDestroy {
  private readonly logger = new Logger(PollHub.name);
  /** Waiters by stream id. */
  private readonly waiting = new Map<string, Set<Waiter>>();
  private readonly waitMs: number;
  private readonly maxPerStream: number;
  private readonly unsubscribe: () => void;
  private scheduled = false;
  private running = false;
  /** A wake-up came during a round: another round follows it. */
  private again = false;
  private closed = false;

  constructor(
    private readonly events: SsfRepository,
    private readonly shutdown: ShutdownState,
    signal: WakeSignal,
    @InjectConfig() config: AppConfiguration,
  ) {
    this.waitMs = config.ssf.pollWaitSeconds * 1000;
    this.maxPerStream = config.ssf.maxWaitingPolls;
    this.unsubscribe = signal.subscribe(() => this.schedule());
    shutdown.drainSignal.addEventListener('abort', () => this.releaseAll(), { once: true });
  }

  /** Long polls waiting now, of one stream or of all. */
  count(streamId?: string): number {
    if (streamId !== undefined) return this.waiting.get(streamId)?.size ?? 0;
    let total = 0;
    for (const waiters of this.waiting.values()) total += waiters.size;
    return total;
  }

  /**
   * Registers a long poll before its first read, so that an event committed between that read and the wait still
   * answers it. 'full' when the stream has SSF_MAX_WAITING_POLLS waiting here; null when it must not wait at all (the
   * instance drains, or the client went away).
   */
  enter(streamId: string, limit: number, gone: AbortSignal): Wait | 'full' | null {
    if (this.closed || this.shutdown.drainSignal.aborted || gone.aborted) return null;
    let waiters = this.waiting.get(streamId);
    if (waiters === undefined) {
      waiters = new Set();
      this.waiting.set(streamId, waiters);
    } else if (waiters.size >= this.maxPerStream) {
      return 'full';
    }
    const stream = waiters;
    let settled = false;
    let resolve!: (sets: PendingSet[]) => void;
    const answer = new Promise<PendingSet[]>((done) => (resolve = done));
    const onGone = (): void => waiter.settle([]);
    const waiter: Waiter = {
      streamId,
      limit,
      settle: (sets) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        gone.removeEventListener('abort', onGone);
        stream.delete(waiter);
        if (stream.size === 0 && this.waiting.get(streamId) === stream) this.waiting.delete(streamId);
        resolve(sets);
      },
    };
    const timer = setTimeout(() => waiter.settle([]), this.waitMs);
    gone.addEventListener('abort', onGone, { once: true });
    stream.add(waiter);
    return { answer, leave: () => waiter.settle([]) };
  }

  onModuleDestroy(): void {
    this.closed = true;
    this.unsubscribe();
    this.releaseAll();
  }

  /** Wake-ups that come while a round is scheduled join it; those during a round get one more round after it. */
  private schedule(): void {
    if (this.waiting.size === 0 || this.closed) return;
    if (this.running) {
      this.again = true;
      return;
    }
    if (this.scheduled) return;
    this.scheduled = true;
    // After the committing request's own work on this turn.
    setImmediate(() => void this.round());
  }

  private async round(): Promise<void> {
    this.scheduled = false;
    if (this.waiting.size === 0 || this.closed) return;
    this.running = true;
    // The waiters of now: one that enters during the read makes a read of its own.
    const waiters = [...this.waiting.values()].flatMap((stream) => [...stream]);
    const limit = Math.max(...waiters.map((waiter) => waiter.limit));
    try {
      const found = await this.events.findPendingOf([...this.waiting.keys()], limit);
      // Several waiters of one stream get the same SETs: delivery is at least once. Each answered waiter signs its
      // SETs at once; in slices, so that the request that committed the event (queued behind this round) is answered
      // before thousands of polls are, not after (docs/adr/0031-revocation-feed-in-production.md#measured).
      for (let start = 0; start < waiters.length; start += SETTLE_SLICE) {
        if (start > 0) await new Promise((next) => setImmediate(next));
        for (const waiter of waiters.slice(start, start + SETTLE_SLICE)) {
          const sets = found.get(waiter.streamId);
          if (sets !== undefined && sets.length > 0) waiter.settle(sets.slice(0, waiter.limit));
        }
      }
    } catch (error) {
      this.logger.warn({ err: error }, 'reading the waiting streams failed; they wait for the next wake-up');
    } finally {
      this.running = false;
      if (this.again) {
        this.again = false;
        this.schedule();
      }
    }
  }

  /** Every waiter answers now, with nothing: a shutdown does not wait for them. */
  private releaseAll(): void {
    for (const stream of [...this.waiting.values()]) for (const waiter of [...stream]) waiter.settle([]);
  }
}
