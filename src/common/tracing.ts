import type { Environment } from '../config/reader';
import { type Tracing, type TracingSettings, tracingSettings } from './tracing-settings';

export type { Tracing } from './tracing-settings';

let active: Tracing | undefined;

/** The running SDK, or undefined: then nothing of OpenTelemetry is loaded. */
export function activeTracing(): Tracing | undefined {
  return active;
}

/**
 * Before anything else is loaded (main.ts imports tracing-start.ts first): the instrumentations hook `require`, so
 * http, pg, ioredis and undici must be loaded after them. The SDK is required only when tracing is on.
 */
export function startTracing(env: Environment): Tracing | undefined {
  const settings = tracingSettings(env);
  if (settings === undefined || active !== undefined) return active;
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- off means not even loaded (docs/deployment.md#traces)
  const sdk = require('./tracing-sdk') as { startSdk(settings: TracingSettings): Tracing };
  active = sdk.startSdk(settings);
  return active;
}
