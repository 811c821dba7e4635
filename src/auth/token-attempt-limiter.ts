import { Inject, Injectable } from '@nestjs/common';
import { CountedRefusal } from './exchange-outcome';
import { AppError, tooManyRequests } from '../common/errors';
import { InjectConfig } from '../config/config.module';
import type { AppConfiguration } from '../config/configuration';
import { FAILURE_COUNTER, FailureCounter } from '../common/failure-counter';
import { clientNetwork } from '../common/client-address';
import { Metrics } from '../metrics/metrics';

/**
 * The failure limit of POST /v1/token: reserve a slot, then check; identical attempts in flight share one
 * (docs/adr/0015-reserve-then-check-failure-limit.md, docs/operations.md#abuse-limits-on-post-v1token).
 */
@Injectable()
export class TokenAttemptLimiter {
  private readonly limit: number;
  private readonly windowMs: number;
  /** The attempts being checked, by client network and key value: the check of an identical attempt is shared. */
  private readonly inFlight = new Map<string, Promise<unknown>>();
  /** Per client network, how many checks run on this instance (each holding a slot until it ends). */
  private readonly checking = new Map<string, number>();
  /** Per client network, the attempts waiting for one of those checks to end, first come first served. */
  private readonly waiting = new Map<string, Array<() => void>>();

  constructor(
    @InjectConfig() config: AppConfiguration,
    @Inject(FAILURE_COUNTER) private readonly counter: FailureCounter,
    private readonly metrics: Metrics,
  ) {
    this.limit = config.rateLimit.tokenFailuresPerMinute;
    this.windowMs = config.rateLimit.tokenFailureWindowSeconds * 1000;
  }

  /** A refusal known without any database work (no key named): counts it, or throws 429 when no failure is left. */
  async countFailure(address: string | undefined): Promise<void> {
    const slot = await this.counter.reserve(bucketOf(clientNetwork(address)), this.limit, this.windowMs);
    if (!slot.granted) throw this.refusal(slot.resetsInMs);
  }

  /**
   * Runs `check` (the credential checks, which read the database) for the key value `presented` within the address's
   * failures: 429 before `check` when none is left.
   */
  attempt<T>(address: string | undefined, presented: string, check: () => Promise<T>): Promise<T> {
    const network = clientNetwork(address);
    const flight = `${network} ${presented}`;
    const running = this.inFlight.get(flight) as Promise<T> | undefined;
    if (running !== undefined) return this.join(running, address);
    const started = this.run(network, check).finally(() => this.inFlight.delete(flight));
    this.inFlight.set(flight, started);
    return started;
  }

  /**
   * Takes a slot, then checks; with every slot held by checks still running, waits for one to end (a burst of good
   * exchanges queues, failures end in 429). One waiter is woken per end: waking all cost tens of µs an exchange.
   */
  private async run<T>(network: string, check: () => Promise<T>): Promise<T> {
    let slot = await this.counter.reserve(bucketOf(network), this.limit, this.windowMs);
    while (!slot.granted) {
      if (!this.checking.has(network)) throw this.refusal(slot.resetsInMs);
      await new Promise<void>((wake) => this.wait(network, wake));
      slot = await this.counter.reserve(bucketOf(network), this.limit, this.windowMs);
    }
    this.checking.set(network, (this.checking.get(network) ?? 0) + 1);
    let failed = false;
    try {
      return await check();
    } catch (error) {
      failed = error instanceof CountedRefusal;
      throw error;
    } finally {
      if (!failed) slot.release();
      this.ended(network);
    }
  }

  private wait(network: string, wake: () => void): void {
    const queue = this.waiting.get(network);
    if (queue === undefined) this.waiting.set(network, [wake]);
    else queue.push(wake);
  }

  /** A check of `network` has ended, its slot given back or kept: the next waiting attempt may ask again. */
  private ended(network: string): void {
    const running = (this.checking.get(network) ?? 1) - 1;
    if (running > 0) this.checking.set(network, running);
    else this.checking.delete(network);
    const queue = this.waiting.get(network);
    if (queue === undefined) return;
    if (running > 0) {
      queue.shift()!();
      if (queue.length === 0) this.waiting.delete(network);
      return;
    }
    this.waiting.delete(network);
    for (const wake of queue) wake();
  }

  /** The 429, counted in gatehouse_rate_limit_refusals_total (docs/operations.md#metrics). */
  private refusal(resetsInMs: number): AppError {
    this.metrics.rateLimited('token_failures');
    return tooManyRequests('too_many_failed_exchanges', resetsInMs);
  }

  /** An identical attempt is being checked: its outcome is this one's; a refusal here is one more failure. */
  private async join<T>(running: Promise<T>, address: string | undefined): Promise<T> {
    try {
      return await running;
    } catch (error) {
      if (error instanceof CountedRefusal) await this.countFailure(address);
      throw error;
    }
  }
}

export { tooManyRequests };

function bucketOf(network: string): string {
  return `token-failures:addr:${network}`;
}
