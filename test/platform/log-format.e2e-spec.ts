import { ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import { TEST_BUILD_DIR_VARIABLE } from '../support/build-directory';
import type { Environment } from '../../src/config/configuration';
import { freePort } from '../support/ports';
import { createTestDatabase, TestDatabase, testSecrets } from '../support/test-app';
import { findBinary, withTool } from '../support/tools';
import { waitFor } from '../support/wait';

/**
 * The server's stdout (docs/operations.md#logs): readable lines when it is a terminal and NODE_ENV is
 * not production, JSON lines otherwise. Needs a real process and a real terminal: the server compiled
 * by Jest's global setup runs as `node main.js`, twice with its stdout on a pipe, and twice inside a
 * pseudo-terminal made by util-linux's `script` (as a person's shell would run it): the four at once, each on a
 * database of its own.
 */
const secrets: Environment = testSecrets;
/** util-linux's `script` (BSD's takes other options, and is taken as missing). */
const SCRIPT = findBinary(['/usr/bin/script', '/bin/script'], ['--version']);
const withTerminal = withTool(it, SCRIPT !== undefined, "util-linux's script", 'apt-get install bsdutils');

// eslint-disable-next-line no-control-regex
const ANSI = /\u001b\[[0-9;]*m/g;

/** The server's output lines (colour codes and the terminal's carriage returns removed), and as written. */
interface Run {
  lines: string[];
  raw: string;
}

/**
 * Starts the built server, waits until it answers GET /healthz (which writes one access line), stops
 * it with SIGTERM, and returns what it wrote.
 */
async function runServer(database: TestDatabase, env: Environment, terminal: boolean): Promise<Run> {
  const port = await freePort();
  const mainJs = join(process.env[TEST_BUILD_DIR_VARIABLE]!, 'main.js');
  const command = terminal ? SCRIPT! : process.execPath;
  // script -q (no banner) -f (flush) -e (its exit code is the server's) -c: the command in a new pseudo-terminal.
  const args = terminal ? ['-qfec', `exec '${process.execPath}' '${mainJs}'`, '/dev/null'] : [mainJs];
  const child: ChildProcess = spawn(command, args, {
    cwd: database.env.DATA_DIR,
    env: {
      PATH: process.env.PATH,
      SHELL: '/bin/sh',
      TERM: 'xterm',
      ...secrets,
      ...database.env,
      HOST: '127.0.0.1',
      PORT: String(port),
      // Any free port: a server already listening on the default 9464 must not make this suite fail.
      METRICS_PORT: '0',
      LOG_LEVEL: 'info',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
    // Its own process group: SIGTERM reaches `script` and the server alike.
    detached: true,
  });
  let raw = '';
  child.stdout!.on('data', (chunk: Buffer) => (raw += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (raw += chunk.toString()));
  const exited = new Promise<void>((ok) => child.once('exit', () => ok()));
  try {
    await waitFor(
      'the server answers /healthz',
      async () => {
        if (child.exitCode !== null) throw new Error('server exited at start');
        // undefined while not listening yet
        return (await fetch(`http://127.0.0.1:${port}/healthz`).catch(() => undefined))?.status === 200;
      },
      { timeoutMs: 30_000, everyMs: 50 },
    ).catch((error: Error) => {
      throw new Error(`${error.message}:\n${raw}`, { cause: error });
    });
    // The access line is written when the response is done: wait for it.
    await waitFor('the access line', () => raw.includes('request completed'), { timeoutMs: 5_000 }).catch(
      () => undefined,
    );
  } finally {
    if (child.exitCode === null) process.kill(-child.pid!, 'SIGTERM');
    await exited;
  }
  const lines = raw
    .replace(ANSI, '')
    .split(/\r?\n/)
    .filter((line) => line.trim() !== '')
    // What `script` itself says when it gets the SIGTERM.
    .filter((line) => !line.startsWith('Session terminated'));
  return { lines, raw };
}

const isJson = (line: string) => {
  try {
    return typeof JSON.parse(line) === 'object';
  } catch {
    return false;
  }
};

describe('log format of the server process', () => {
  /** The runs the tests read, each on a database of its own. */
  const RUNS = {
    // On a pipe, NODE_ENV development and a public URL: it serves two tests.
    pipeDevelopment: [{ NODE_ENV: 'development', PUBLIC_BASE_URL: 'https://gatehouse.example.com' }, false],
    pipeUnset: [{}, false],
    terminalDevelopment: [{ NODE_ENV: 'development' }, true],
    terminalProduction: [{ NODE_ENV: 'production' }, true],
  } satisfies Record<string, [Environment, boolean]>;
  const databases: TestDatabase[] = [];
  const runs = new Map<keyof typeof RUNS, Promise<Run>>();

  beforeAll(() => {
    // All at once: a start costs seconds, and each run waits on its server as much as it computes.
    for (const [name, [env, terminal]] of Object.entries(RUNS) as Array<[keyof typeof RUNS, [Environment, boolean]]>) {
      if (terminal && SCRIPT === undefined) continue;
      const database = createTestDatabase();
      databases.push(database);
      const run = runServer(database, env, terminal);
      void run.catch(() => undefined); // its failure is that of the test that reads it
      runs.set(name, run);
    }
  });

  afterAll(async () => {
    await Promise.allSettled(runs.values());
    for (const database of databases) await database.drop();
  });

  const runOf = (name: keyof typeof RUNS): Promise<Run> =>
    runs.get(name) ??
    Promise.reject(new Error(`${name}: util-linux's script is not installed (apt-get install bsdutils)`));

  it('stdout on a pipe: JSON lines only, the access line among them', async () => {
    const { lines, raw } = await runOf('pipeDevelopment');
    expect(lines.length).toBeGreaterThan(1);
    expect(lines.filter((line) => !isJson(line))).toEqual([]);
    const access = lines.map((line) => JSON.parse(line)).find((entry) => entry.msg === 'request completed');
    expect(access).toMatchObject({ level: 'info', req: { method: 'GET', path: '/healthz' }, res: { statusCode: 200 } });
    expect(raw).not.toContain('\u001b[');
  }, 60_000);

  withTerminal(
    'stdout a terminal, NODE_ENV development: one readable line per event, no JSON',
    async () => {
      const { lines } = await runOf('terminalDevelopment');
      expect(lines.filter(isJson)).toEqual([]);
      expect(lines).toContainEqual(
        expect.stringMatching(
          /^\[\d\d:\d\d:\d\d\.\d{3}\] INFO: \[NestApplication\] Nest application successfully started$/,
        ),
      );
      expect(lines).toContainEqual(
        expect.stringMatching(/ INFO: request completed GET \/healthz 200 \d+ms \{"requestId":"[0-9a-f-]{36}"\}$/),
      );
    },
    60_000,
  );

  it('the start names where it listens and its public URL; NODE_ENV unset warns that it is a local run', async () => {
    const entries = (run: Run) => run.lines.filter(isJson).map((line) => JSON.parse(line) as Record<string, unknown>);
    const unset = entries(await runOf('pipeUnset'));
    const listening = unset.find((entry) => String(entry.msg).startsWith('listening on'));
    expect(listening?.msg).toMatch(
      /^listening on 127\.0\.0\.1:(\d+); public URL http:\/\/localhost:\1, console at http:\/\/localhost:\1\/console\/$/,
    );
    expect(unset.filter((entry) => entry.level === 'warn').map((entry) => entry.msg)).toEqual([
      expect.stringMatching(
        /^NODE_ENV is not set: a local development run on 127\.0\.0\.1 only, with secrets generated into .*local-secrets\.json unless configured; set NODE_ENV=production for a deployment$/,
      ),
    ]);
    const declared = entries(await runOf('pipeDevelopment'));
    expect(declared.find((entry) => String(entry.msg).startsWith('listening on'))?.msg).toMatch(
      /^listening on 127\.0\.0\.1:\d+; public URL https:\/\/gatehouse\.example\.com, console at https:\/\/gatehouse\.example\.com\/console\/$/,
    );
    expect(declared.filter((entry) => entry.level === 'warn')).toEqual([]);
  }, 60_000);

  withTerminal(
    'stdout a terminal, NODE_ENV production: still JSON lines',
    async () => {
      const { lines } = await runOf('terminalProduction');
      expect(lines.length).toBeGreaterThan(1);
      expect(lines.filter((line) => !isJson(line))).toEqual([]);
      expect(lines.map((line) => JSON.parse(line).msg)).toContain('request completed');
    },
    60_000,
  );
});
