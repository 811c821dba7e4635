import { Injectable } from '@nestjs/common';
import { AppError } from '../common/errors';
import type { PollAnswer, PollRequest } from './dto/poll.dto';
import { PollHub } from './poll-hub';
import { SetSigner } from './set-signer';
import { PendingSet, SsfRepository } from './ssf.repository';

/** The stream a poll reads and the audience its SETs carry. */
export interface PolledStream {
  id: string;
  audience: string;
}

const tooManyWaiting = (): AppError =>
  new AppError('too_many_waiting_polls', {
    headers: { 'Retry-After': '1' },
  });

/** RFC 8936 poll delivery of one stream: acknowledgements, errors, then the pending SETs or a long poll. */
@Injectable()
export class SsfPollService {
  constructor(
    private readonly events: SsfRepository,
    private readonly hub: PollHub,
    private readonly signer: SetSigner,
  ) {}

  /** `gone` fires when the client goes away: a waiting poll then leaves the hub. */
  async poll(stream: PolledStream, request: PollRequest, gone: AbortSignal): Promise<PollAnswer> {
    const now = new Date();
    await this.events.acknowledgeAll(stream.id, request.ack, now);
    for (const [jti, error] of request.setErrs) await this.events.recordError(stream.id, jti, error, now);
    // The acknowledgements above stand even when the wait is refused: they are the receiver's record of what it
    // applied, and its retry (or another poll of the stream) is then not sent those SETs again.
    const limit = request.maxEvents + 1;
    const wait = request.returnImmediately ? null : this.hub.enter(stream.id, limit, gone);
    if (wait === 'full') throw tooManyWaiting();
    let pending: PendingSet[];
    try {
      // Registered before this read: an event committed after it still answers the wait.
      pending = await this.events.findPending(stream.id, limit);
      if (pending.length === 0 && wait !== null) pending = await wait.answer;
    } finally {
      wait?.leave();
    }
    const sets: Record<string, string> = {};
    for (const set of pending.slice(0, request.maxEvents)) sets[set.jti] = await this.signer.sign(set, stream.audience);
    return { sets, moreAvailable: pending.length > request.maxEvents };
  }
}
