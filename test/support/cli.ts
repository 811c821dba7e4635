import { CliResult, runCli } from '../../src/cli';
import type { Environment } from '../../src/config/configuration';
import { testBuildDirectory } from './build-directory';

/** The admin CLI in this process, its worker threads loaded from the tests' compiled copy of src/. */
export function runTestCli(argv: string[], env?: Environment): Promise<CliResult> {
  return runCli(argv, env, { workerDirectory: testBuildDirectory() });
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
