/** One check of the readiness probe, in @nestjs/terminus' shape (`{ status: 'up', ... }`). */
export interface ReadinessCheck {
  status: 'up' | 'down';
  [detail: string]: string | number;
}

/** The readiness probe's body when ready, as GET /readyz has always answered it (terminus' result shape). */
export interface ReadyBody {
  status: 'ok';
  info: Record<string, ReadinessCheck>;
  error: Record<string, never>;
  details: Record<string, ReadinessCheck>;
}

/** Readiness, asked by GET /readyz on the public port and on the metrics port (docs/deployment.md#probes). */
export interface Probes {
  /** The ready body, or undefined when not ready (draining, database, migrations or signing keys). */
  readiness(): Promise<ReadyBody | undefined>;
}

/** Provided by the health module (global): the metrics listener serves the same probes without importing it. */
export const PROBES = Symbol('PROBES');

/** Liveness: the process answers. Never touches the database. */
export const LIVE_BODY = { status: 'ok' } as const;
