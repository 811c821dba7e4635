import type { INestApplicationContext } from '@nestjs/common';
import { CliResult, createCliContext, runCli } from '../../src/cli';
import type { Environment } from '../../src/config/configuration';
import { testBuildDirectory } from './build-directory';
import { closed, keepUntilClosed } from './leftovers';

/**
 * The admin CLI in this process, its worker threads loaded from the tests' compiled copy of src/. Without `context` it
 * boots the application for the command and closes it after, as the `gatehouse` binary does; with one (from
 * {@link startTestCli}) the command runs against it.
 */
export function runTestCli(argv: string[], env?: Environment, context?: INestApplicationContext): Promise<CliResult> {
  return runCli(argv, env, { workerDirectory: testBuildDirectory(), context });
}

/** The admin CLI for a suite that runs many commands with one environment. */
export interface TestCli {
  /** Runs a command against the suite's one application context: parsed, run and printed as `runTestCli` does. */
  run(...argv: string[]): Promise<CliResult>;
  close(): Promise<void>;
}

/**
 * One application context for a suite's commands (in `beforeAll`, closed in `afterAll`): booting one per command costs
 * seconds on a busy machine. What only a boot decides (local secrets generated) is asserted with `runTestCli` without a
 * context.
 */
export async function startTestCli(env: Environment): Promise<TestCli> {
  const context = await keepUntilClosed(createCliContext(env, { workerDirectory: testBuildDirectory() }), (started) =>
    started.close(),
  );
  return {
    run: (...argv) => runTestCli(argv, env, context),
    close: () => {
      closed(context);
      return context.close();
    },
  };
}

/** The admin CLI's two outcomes, asserted as docs/operations.md#admin-cli states them. */
export function cliChecks(cli: (...argv: string[]) => Promise<CliResult>) {
  return {
    /** Exit 0 and exactly one JSON object on one line of stdout, nothing on stderr. */
    async ok<T extends object = Record<string, unknown>>(...argv: string[]): Promise<T> {
      const result = await cli(...argv);
      expect({ exitCode: result.exitCode, stderr: result.stderr }).toEqual({ exitCode: 0, stderr: '' });
      expect(result.stdout).toMatch(/^\{.*\}\n$/);
      return JSON.parse(result.stdout) as T;
    },
    /** Exit 2, a message on stderr, nothing on stdout. */
    async fails(argv: string[], stderr: RegExp): Promise<void> {
      const result = await cli(...argv);
      expect(result.exitCode).toBe(2);
      expect(result.stdout).toBe('');
      expect(result.stderr).toMatch(/^error: /);
      expect(result.stderr).toMatch(stderr);
    },
  };
}
