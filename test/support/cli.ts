import type { CliResult } from '../../src/cli';

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
