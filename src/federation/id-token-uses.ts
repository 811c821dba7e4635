import { createHash } from 'node:crypto';
import { Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { IdTokenUsesRepository, PRUNE_BATCH_SIZE } from './id-token-uses.repository';
import { CLOCK_LEEWAY_SECONDS } from './subject-token-rules';
import type { SubjectClaims } from './subject-token-verifier';

/** How often each server deletes the uses of tokens that have expired. */
export const PRUNE_INTERVAL_MS = 10 * 60 * 1000;

/**
 * What identifies an ID token among its issuer's: its `jti` when it has one (RFC 7519 section 4.1.7), else its signed
 * header and payload. Not the signature: an ECDSA signature has a second valid form ((r, n - s)), so the same token
 * could be presented again under other bytes. The SHA-256 of the issuer and that, in hex.
 */
export function idTokenKey(claims: Pick<SubjectClaims, 'iss' | 'jti'>, token: string): string {
  const identity =
    typeof claims.jti === 'string' && claims.jti !== ''
      ? `jti ${claims.jti}`
      : `jws ${token.slice(0, token.lastIndexOf('.'))}`;
  return createHash('sha256').update(`${claims.iss}\n${identity}`).digest('hex');
}

/**
 * Each ID token of a person is exchanged once (docs/federation.md#people-id-tokens): its use is remembered until the
 * token could no longer be accepted (`exp` and the clock leeway), one insert per exchange, whose primary key decides
 * between instances. Every 10 minutes, in the server only, the uses of expired tokens are deleted.
 */
@Injectable()
export class IdTokenUses implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger(IdTokenUses.name);
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly uses: IdTokenUsesRepository,
    private readonly adapterHost: HttpAdapterHost,
  ) {}

  onApplicationBootstrap(): void {
    if (this.adapterHost.httpAdapter == null) return;
    this.timer = setInterval(() => void this.prune(), PRUNE_INTERVAL_MS);
    this.timer.unref();
  }

  onModuleDestroy(): void {
    clearInterval(this.timer);
  }

  /** True for the first use of the token (recorded now); false when it was used before, here or on another instance. */
  first(claims: SubjectClaims, token: string): Promise<boolean> {
    return this.uses.insert(idTokenKey(claims, token), new Date((claims.exp + CLOCK_LEEWAY_SECONDS) * 1000));
  }

  /** Deletes the uses of tokens expired before `now`, a batch at a time; how many. Never rejects (the next run retries). */
  async prune(now = new Date()): Promise<number> {
    let deleted = 0;
    try {
      let batch: number;
      do {
        batch = await this.uses.pruneExpired(now);
        deleted += batch;
      } while (batch === PRUNE_BATCH_SIZE);
    } catch (error) {
      this.logger.warn({ err: error }, 'pruning the used ID tokens failed; retrying in 10 minutes');
    }
    return deleted;
  }
}
