import { Injectable, Logger } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { TokenService } from '../auth/token.service';
import type { Probes, ReadinessCheck, ReadyBody } from '../common/probes';
import { ShutdownState } from '../common/shutdown.state';
import { pendingMigrations } from '../database/migration-state';

/** A readiness probe never hangs: a database that does not answer within this is "not ready". */
export const READINESS_TIMEOUT_MS = 1000;

class ReadinessTimeout extends Error {}

function within<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new ReadinessTimeout(`no answer within ${ms} ms`)), ms);
  });
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}

/**
 * Ready: not draining, the database answers within 1 s, every migration this build knows is applied, and the signing
 * keys are loaded (docs/deployment.md#probes). One query per probe.
 */
@Injectable()
export class Readiness implements Probes {
  private readonly logger = new Logger('Readiness');
  /** Logged once per change, not at every probe of a long outage. */
  private lastFailure: string | undefined;

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly shutdown: ShutdownState,
    private readonly tokens: TokenService,
  ) {}

  async readiness(): Promise<ReadyBody | undefined> {
    if (this.shutdown.isDraining) return undefined;
    const startedAt = performance.now();
    let pending: string[];
    try {
      pending = await within(pendingMigrations(this.dataSource), READINESS_TIMEOUT_MS);
    } catch (error) {
      return this.notReady('database', error);
    }
    const database: ReadinessCheck = { status: 'up', responseTime: Math.round(performance.now() - startedAt) };
    if (pending.length > 0) return this.notReady('migrations', { pending });
    const keys = this.tokens.keys.jwks().keys.length;
    if (keys === 0) return this.notReady('signing_keys', { keys });
    this.lastFailure = undefined;
    const checks = {
      database,
      migrations: { status: 'up', applied: this.dataSource.migrations.length },
      signing_keys: { status: 'up', keys },
    } satisfies Record<string, ReadinessCheck>;
    return { status: 'ok', info: checks, error: {}, details: checks };
  }

  private notReady(check: string, cause: unknown): undefined {
    if (this.lastFailure !== check) {
      this.lastFailure = check;
      this.logger.warn(cause instanceof Error ? { check, err: cause } : { check, ...(cause as object) }, 'not ready');
    }
    return undefined;
  }
}
