import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';

/** The Redis the tests use (REDIS_URL, else the local one). */
export const TEST_REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

/**
 * Whether TEST_REDIS_URL answers PING, decided synchronously so that a suite can choose between
 * `describe` and `describe.skip` when it is defined. Under CI (CI=true) an unreachable Redis is an error, never a skip:
 * .ci/run starts one, and a skipped case proves nothing.
 */
export function redisReachable(url = TEST_REDIS_URL): boolean {
  const { hostname, port } = new URL(url);
  const probe = `
    const socket = require('node:net').connect(${Number(port || 6379)}, ${JSON.stringify(hostname)});
    socket.setTimeout(1000, () => process.exit(1));
    socket.on('error', () => process.exit(1));
    socket.on('connect', () => socket.write('PING\\r\\n'));
    socket.on('data', (data) => process.exit(/^\\+PONG|^-NOAUTH/.test(String(data)) ? 0 : 1));`;
  const reachable = spawnSync(process.execPath, ['-e', probe], { timeout: 3000 }).status === 0;
  if (!reachable && process.env.CI === 'true') {
    throw new Error(`Redis at ${url} is unreachable: under CI the Redis cases run, they are not skipped`);
  }
  return reachable;
}

/** A key prefix of its own, so that test runs (and tests) sharing one Redis never see each other's keys. */
export function uniqueRedisPrefix(): string {
  return `gatehouse-test:${randomBytes(6).toString('hex')}:`;
}
