import { errors as joseErrors, JWTPayload, jwtVerify, JWTVerifyGetKey } from 'jose';
import { asSetupError } from './errors';
import { GatehouseClient, InstanceStream, PollAnswer, StreamGone, TooManyPolls } from './gatehouse';

/**
 * The revocation feed of one verifier instance (ADR 0031): its own stream, a long poll and a heartbeat on it, the
 * events applied in order, acknowledged in chunks that fit the poll's body limit, and freshness only when caught up.
 */

const CREDENTIAL_CHANGE = 'https://schemas.openid.net/secevent/caep/event-type/credential-change';
const TOKEN_CLAIMS_CHANGE = 'https://schemas.openid.net/secevent/caep/event-type/token-claims-change';
/** Tokens live at most 24 h: a revoked key is remembered a little longer. */
const REVOKED_MEMORY_MS = 25 * 60 * 60 * 1000;
/** An applied SET's jti, so a late answer of the other loop does not apply an older event again. */
const SEEN_MEMORY_MS = 60 * 60 * 1000;
const MAX_EVENTS = 1000;
/** 1,000 acknowledgements and 50 errors of 200 characters fit the poll's 64 KB body. */
export const MAX_ACKS = 1000;
export const MAX_SET_ERRS = 50;
const MAX_DESCRIPTION = 200;
const BACKOFF_MIN_MS = 250;
const BACKOFF_MAX_MS = 5_000;
/** A long poll answered empty sooner than this (a server that does not wait) is not sent again before it. */
const MIN_LONG_POLL_MS = 1_000;
const HEARTBEAT_TIMEOUT_MS = 5_000;
/** A long poll the server never answers (a silent network) is given up after this long. */
const LONG_POLL_TIMEOUT_MS = 30_000;

/** jose errors that mean the SET itself is invalid (setErrs); any other failure is transient and retried. */
const INVALID_SET: Record<string, string> = {
  [joseErrors.JWSSignatureVerificationFailed.code]: 'invalid_key',
  [joseErrors.JOSEAlgNotAllowed.code]: 'invalid_key',
  [joseErrors.JOSENotSupported.code]: 'invalid_key',
  [joseErrors.JWSInvalid.code]: 'invalid_request',
  [joseErrors.JWTInvalid.code]: 'invalid_request',
  [joseErrors.JWTClaimValidationFailed.code]: 'invalid_request',
};

type SetErr = { err: string; description: string };

export interface FeedOptions {
  issuer: string;
  audience: string;
  maxStalenessMs: number;
}

export class Feed {
  /** API key id -> when its revocation was applied (ms). */
  readonly revoked = new Map<string, number>();
  /** API key id -> when it expires after a rotation with grace (ms): its tokens are refused from then on. */
  readonly expiring = new Map<string, number>();
  /** `${org} ${sub}` -> the scopes the member's role now allows (the latest token-claims-change). */
  readonly allowed = new Map<string, Set<string>>();
  /** Tokens issued at or before this (seconds, Gatehouse's clock) are confirmed by introspection. */
  startTime = Infinity;
  /** Counts streams: a confirmation holds only for the stream it was made under. */
  epoch = 0;
  private lastContact = 0;
  private stream: InstanceStream | undefined;
  private renewing: Promise<void> | undefined;
  private behind = false;
  private readonly acks = new Set<string>();
  private readonly setErrs = new Map<string, SetErr>();
  private readonly seen = new Map<string, number>();
  private applying: Promise<unknown> = Promise.resolve();
  private readonly stopping = new AbortController();
  private readonly loops: Array<Promise<void>> = [];

  constructor(
    private readonly client: GatehouseClient,
    private readonly jwks: JWTVerifyGetKey,
    private readonly options: FeedOptions,
  ) {}

  /** Caught up with the stream within maxStalenessSeconds. */
  get fresh(): boolean {
    return Date.now() - this.lastContact <= this.options.maxStalenessMs;
  }

  /** Makes the stream and drains it, so the verifier starts fresh; then the long poll and the heartbeat. */
  async start(): Promise<void> {
    try {
      await this.renew();
    } catch (error) {
      throw asSetupError(error);
    }
    const stream = this.stream!;
    try {
      let behind = true;
      while (behind) ({ behind } = await this.poll(true));
    } catch (error) {
      await this.client.deleteStream(stream.id);
      throw asSetupError(error);
    }
    this.loops.push(this.loop(false), this.loop(true));
  }

  async close(): Promise<void> {
    this.stopping.abort();
    await Promise.allSettled(this.loops);
    const stream = this.stream;
    this.stream = undefined;
    if (stream !== undefined) await this.client.deleteStream(stream.id);
  }

  /** Polls until closed: the long poll waits at Gatehouse for the next event; the heartbeat returns at once. */
  private async loop(heartbeat: boolean): Promise<void> {
    const { signal } = this.stopping;
    let backoff = BACKOFF_MIN_MS;
    while (!signal.aborted) {
      try {
        if (this.stream === undefined) await this.renew();
        const returnImmediately = heartbeat || this.behind || this.overflowing();
        const started = Date.now();
        const { count } = await this.poll(returnImmediately);
        backoff = BACKOFF_MIN_MS;
        if (this.behind || this.overflowing()) continue;
        if (heartbeat) await this.sleep(Math.max(250, this.options.maxStalenessMs / 3));
        else if (!returnImmediately && count === 0) await this.sleep(MIN_LONG_POLL_MS - (Date.now() - started));
      } catch (error) {
        if (signal.aborted) return;
        await this.sleep(error instanceof TooManyPolls ? Math.max(error.retryAfterMs, backoff) : backoff);
        backoff = Math.min(backoff * 2, BACKOFF_MAX_MS);
      }
    }
  }

  /** One poll: sends what is due, applies what comes; fresh only if every SET was applied and nothing more waits. */
  private async poll(returnImmediately: boolean): Promise<{ behind: boolean; count: number }> {
    const stream = this.stream;
    if (stream === undefined) throw new Error('no stream');
    const ack = takeAcks(this.acks, MAX_ACKS);
    const setErrs = takeSetErrs(this.setErrs, MAX_SET_ERRS);
    let answer: PollAnswer;
    try {
      answer = await this.client.poll(
        stream,
        { maxEvents: MAX_EVENTS, returnImmediately, ack, setErrs },
        returnImmediately ? HEARTBEAT_TIMEOUT_MS : LONG_POLL_TIMEOUT_MS,
        this.stopping.signal,
      );
    } catch (error) {
      if (error instanceof StreamGone) {
        if (this.stream === stream) this.lose();
      } else if (this.stream === stream) {
        // Not acknowledged: said again with the next poll.
        for (const jti of ack) this.acks.add(jti);
        for (const [jti, err] of Object.entries(setErrs)) this.setErrs.set(jti, err);
      }
      throw error;
    }
    const count = Object.keys(answer.sets).length;
    const applied = await this.serially(() => this.applyAll(answer.sets));
    if (this.stream !== stream) throw new Error('the stream was replaced meanwhile');
    if (!applied) throw new Error('a SET could not be verified now: the poll is retried');
    this.behind = answer.moreAvailable && count > 0;
    if (!this.behind) this.lastContact = Date.now();
    this.forgetOld();
    return { behind: this.behind, count };
  }

  /** The stream is gone (404): start again as after a restart, with a new S (every older token confirmed again). */
  private lose(): void {
    this.stream = undefined;
    this.startTime = Infinity;
    this.lastContact = 0;
    this.behind = false;
    this.acks.clear();
    this.setErrs.clear();
  }

  /** One stream creation at a time, whichever loop asks. */
  private renew(): Promise<void> {
    this.renewing ??= (async () => {
      try {
        const stream = await this.client.createStream(this.stopping.signal);
        this.epoch += 1;
        this.stream = stream;
        this.startTime = stream.startTime;
      } finally {
        this.renewing = undefined;
      }
    })();
    return this.renewing;
  }

  /** Both loops apply what they receive one batch at a time, so events apply in the order Gatehouse sent them. */
  private serially<T>(task: () => Promise<T>): Promise<T> {
    const run = this.applying.then(task, task);
    this.applying = run.catch(() => undefined);
    return run;
  }

  /** False at the first SET that cannot be verified now: it and those after it come again, in order. */
  private async applyAll(sets: Record<string, unknown>): Promise<boolean> {
    for (const [jti, set] of Object.entries(sets)) {
      if (this.seen.has(jti)) {
        this.acks.add(jti);
        continue;
      }
      let payload: JWTPayload;
      try {
        ({ payload } = await jwtVerify(set as string, this.jwks, {
          issuer: this.options.issuer,
          audience: this.options.audience,
          typ: 'secevent+jwt',
          algorithms: ['ES256'],
          requiredClaims: ['iat', 'jti'],
        }));
      } catch (error) {
        const err = invalidSetError(error);
        if (err === undefined) return false;
        this.setErrs.set(jti, { err, description: describe(error) });
        continue;
      }
      this.apply(payload);
      this.seen.set(jti, Date.now());
      this.acks.add(jti);
    }
    return true;
  }

  private apply(payload: JWTPayload): void {
    const events = (payload.events ?? {}) as Record<string, Record<string, unknown> | undefined>;
    const subject = payload.sub_id as { id?: unknown; sub?: unknown } | undefined;
    const credential = events[CREDENTIAL_CHANGE];
    if (credential !== undefined && typeof subject?.id === 'string') {
      if (credential.change_type === 'revoke') this.revoked.set(subject.id, Date.now());
      // A rotation with a grace period: the old key's tokens end at the grace's end.
      if (credential.change_type === 'update' && typeof credential.expires_at === 'number') {
        this.expiring.set(subject.id, credential.expires_at * 1000);
      }
    }
    const change = events[TOKEN_CLAIMS_CHANGE] as { claims?: { org?: unknown; scope?: unknown } } | undefined;
    if (typeof change?.claims?.org === 'string' && typeof subject?.sub === 'string') {
      const scope = typeof change.claims.scope === 'string' ? change.claims.scope : '';
      this.allowed.set(`${change.claims.org} ${subject.sub}`, new Set(scope === '' ? [] : scope.split(' ')));
    }
  }

  /** More acknowledgements or errors than the next poll carries: it goes at once, and another after it. */
  private overflowing(): boolean {
    return this.acks.size > MAX_ACKS || this.setErrs.size > MAX_SET_ERRS;
  }

  private forgetOld(): void {
    const now = Date.now();
    for (const [id, at] of this.revoked) if (at < now - REVOKED_MEMORY_MS) this.revoked.delete(id);
    // No token of the key outlives its expiry by more than a token's lifetime.
    for (const [id, at] of this.expiring) if (at < now - REVOKED_MEMORY_MS) this.expiring.delete(id);
    for (const [jti, at] of this.seen) if (at < now - SEEN_MEMORY_MS) this.seen.delete(jti);
  }

  private sleep(ms: number): Promise<void> {
    const { signal } = this.stopping;
    if (ms <= 0 || signal.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const onAbort = (): void => {
        clearTimeout(timer);
        resolve();
      };
      const timer = setTimeout(() => {
        signal.removeEventListener('abort', onAbort);
        resolve();
      }, ms);
      signal.addEventListener('abort', onAbort, { once: true });
    });
  }
}

/** Removes and returns the first `n` acknowledgements. */
function takeAcks(from: Set<string>, n: number): string[] {
  const taken = [...from].slice(0, n);
  for (const jti of taken) from.delete(jti);
  return taken;
}

/** Removes and returns the first `n` errors. */
function takeSetErrs(from: Map<string, SetErr>, n: number): Record<string, SetErr> {
  const taken = [...from].slice(0, n);
  for (const [jti] of taken) from.delete(jti);
  return Object.fromEntries(taken);
}

/** The RFC 8935 error for a SET that is itself invalid; undefined for a failure that may pass (JWKS, network). */
export function invalidSetError(error: unknown): string | undefined {
  if (!(error instanceof joseErrors.JOSEError)) return undefined;
  if (error instanceof joseErrors.JWTClaimValidationFailed) {
    if (error.claim === 'iss') return 'invalid_issuer';
    if (error.claim === 'aud') return 'invalid_audience';
  }
  return INVALID_SET[error.code];
}

/** A setErrs description: ASCII, at most 200 characters, so 50 of them always fit the body limit. */
function describe(error: unknown): string {
  const message = error instanceof Error ? error.message : 'unreadable';
  return message.replace(/[^\x20-\x7e]/g, '?').slice(0, MAX_DESCRIPTION);
}
