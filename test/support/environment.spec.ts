import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

/**
 * The test environment (test/support/environment.ts) as a suite's author sees it: Jest run on the fixtures beside this
 * file, its JSON report read.
 */
const ROOT = resolve(__dirname, '..', '..');

interface Report {
  numFailedTests: number;
  numPendingTests: number;
  testResults: Array<{
    message: string;
    assertionResults: Array<{ fullName: string; status: string; failureMessages: string[] }>;
  }>;
}

function jest(fixture: string, env: Record<string, string> = {}): Promise<Report> {
  const config = {
    rootDir: join(__dirname, 'fixtures', 'environment'),
    testEnvironment: join(__dirname, 'environment.ts'),
    testRegex: `${fixture}\\.fixture\\.ts$`,
    transform: { '^.+\\.ts$': ['@swc/jest'] },
  };
  return new Promise((done, fail) =>
    execFile(
      process.execPath,
      [join(ROOT, 'node_modules', 'jest', 'bin', 'jest.js'), '--config', JSON.stringify(config), '--json', '--ci'],
      { cwd: ROOT, env: { ...process.env, ...env } },
      (error, stdout, stderr) => {
        if (stdout === '') fail(new Error(`jest printed no report: ${stderr}`, { cause: error }));
        else done(JSON.parse(stdout) as Report);
      },
    ),
  );
}

describe('the test environment', () => {
  it('reports a failed beforeAll once: its first test fails with the error, the others are skipped; its afterAll tripping over what was never set up is not reported', async () => {
    const report = await jest('failed-set-up');
    const [file] = report.testResults;
    expect(
      file.assertionResults.map(({ fullName, status, failureMessages }) => ({
        fullName,
        status,
        failures: failureMessages.map((message) => message.split('\n')[0]),
      })),
    ).toEqual([
      {
        fullName: 'a block whose set-up fails first',
        status: 'failed',
        failures: ['Error: beforeAll of "a block whose set-up fails" failed: the identity provider did not start'],
      },
      { fullName: 'a block whose set-up fails second', status: 'pending', failures: [] },
      { fullName: 'a block whose set-up fails nested third', status: 'pending', failures: [] },
      { fullName: 'beside it', status: 'passed', failures: [] },
    ]);
    expect(file.message).not.toMatch(/TypeError/);
  }, 60_000);

  it('closes what a timed-out set-up was still starting, before the file is torn down', async () => {
    const folder = mkdtempSync(join(tmpdir(), 'gatehouse-leftover-'));
    try {
      const mark = join(folder, 'closed');
      const report = await jest('left-booting', { LEFTOVER_MARK: mark });
      expect(report.testResults[0].assertionResults.map(({ status }) => status)).toEqual(['failed']);
      expect(report.testResults[0].assertionResults[0].failureMessages[0]).toMatch(
        /beforeAll of "a set-up that times out" failed: .*Exceeded timeout of 50 ms/,
      );
      expect(existsSync(mark) && readFileSync(mark, 'utf8')).toBe('closed');
    } finally {
      rmSync(folder, { recursive: true, force: true });
    }
  }, 60_000);
});
