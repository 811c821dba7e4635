import { execFileSync } from 'node:child_process';

/**
 * Tests that drive a program from Debian's packages (nginx, caddy, apache2, promtool, curl): `npm test` passes with
 * Node alone, skipping them with one line that says what to install; under CI (which installs them, .ci/run) a missing
 * one fails instead.
 */

/** The first of `candidates` that runs with `args` (a version flag), or undefined. */
export function findBinary(candidates: string[], args: string[]): string | undefined {
  return candidates.find((path) => {
    try {
      execFileSync(path, args, { stdio: 'ignore' });
      return true;
    } catch {
      return false;
    }
  });
}

/**
 * `run` (a `describe` or an `it`) when the tool is there, or under CI, where its absence fails the tests; otherwise
 * `run.skip`, after one line on stderr saying what to install.
 */
export function withTool<T extends jest.Describe | jest.It>(
  run: T,
  present: boolean,
  name: string,
  install: string,
): T {
  if (present || (process.env.CI ?? '') !== '') return run;
  process.stderr.write(`${name} not installed: its tests are SKIPPED (${install})\n`);
  return run.skip as T;
}
