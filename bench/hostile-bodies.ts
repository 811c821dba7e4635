/**
 * `npm run bench:bodies`: what a hostile request body costs the server (docs/adr/0026-request-body-bounds.md).
 * Starts the built server (SQLite, in a temp directory) as a child process and, for each scenario, sends
 * BENCH_BODIES requests one after the other, reading the server's CPU time (/proc/<pid>/stat) before and
 * after: CPU ms per request, and the statuses seen. Then two clients send the costliest body in a loop
 * while a third measures GET /healthz: its p50 and p99 beside those of an idle server.
 * BENCH_ROOT: the checkout whose dist/ to run (default this one), to compare two versions on one machine.
 */
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { freePort, productionSettings, waitFor } from './support';

const ROOT = process.env.BENCH_ROOT ?? resolve(__dirname, '..', '..');
const REQUESTS = Number(process.env.BENCH_BODIES ?? 200);
const LOAD_SECONDS = Number(process.env.BENCH_LOAD_SECONDS ?? 5);
const TICKS_PER_SECOND = 100;

const nested = (depth: number): string => '['.repeat(depth) + ']'.repeat(depth);
const SCENARIOS = [
  { name: 'GET /healthz (baseline)', method: 'GET', path: '/healthz', body: undefined },
  {
    name: 'PUT /v1/api-keys/exposed/x, 320 KB of nested arrays',
    method: 'PUT',
    path: '/v1/api-keys/exposed/x',
    body: nested(160_000),
  },
  {
    name: 'POST /v1/api-keys/exposed, 300 KB nested',
    method: 'POST',
    path: '/v1/api-keys/exposed',
    body: nested(150_000),
  },
  {
    name: 'POST /v1/console/sessions, 16 KB nested 8,000 deep',
    method: 'POST',
    path: '/v1/console/sessions',
    body: `{"code":"x","extra":${nested(8000)}}`,
  },
];

/** The process's user + system CPU time so far, in ms. */
function cpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS_PER_SECOND;
}

async function send(base: string, scenario: (typeof SCENARIOS)[number]): Promise<number> {
  const response = await fetch(base + scenario.path, {
    method: scenario.method,
    headers: scenario.body === undefined ? {} : { 'Content-Type': 'application/json' },
    body: scenario.body,
  });
  await response.arrayBuffer();
  return response.status;
}

function quantile(sorted: number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)];
}

async function healthzLatency(base: string, seconds: number): Promise<{ p50: number; p99: number }> {
  const samples: number[] = [];
  const end = Date.now() + seconds * 1000;
  while (Date.now() < end) {
    const started = performance.now();
    await (await fetch(`${base}/healthz`)).arrayBuffer();
    samples.push(performance.now() - started);
  }
  samples.sort((a, b) => a - b);
  return { p50: quantile(samples, 0.5), p99: quantile(samples, 0.99) };
}

async function main(): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), 'gatehouse-bench-bodies-'));
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    NODE_ENV: 'production',
    HOST: '127.0.0.1',
    PORT: String(port),
    DATA_DIR: dataDir,
    DATABASE_URL: `sqlite:${join(dataDir, 'gatehouse.sqlite')}`,
    ...productionSettings(),
    EXPOSED_REPORTS_PER_HOUR: '100000',
    CONSOLE_SIGN_IN_FAILURE_LIMIT_PER_MINUTE: '100000',
    EXPOSED_REPORT_MIN_RESPONSE_MS: '0',
    LOG_LEVEL: 'fatal',
  };
  execFileSync('node', [join(ROOT, 'dist/cli.js'), 'bootstrap', '--org', 'bench', '--email', 'bench@bench.test'], {
    env,
  });
  const server = spawn('node', [join(ROOT, 'dist/main.js')], { env, stdio: ['ignore', 'ignore', 'ignore'] });
  try {
    await waitFor(`${base}/healthz`, 20_000);
    console.log(`hostile bodies against ${ROOT}: ${REQUESTS} requests per scenario, one at a time`);
    for (const scenario of SCENARIOS) {
      for (let i = 0; i < 20; i += 1) await send(base, scenario);
      const statuses = new Map<number, number>();
      const before = cpuMs(server.pid!);
      for (let i = 0; i < REQUESTS; i += 1) {
        const status = await send(base, scenario);
        statuses.set(status, (statuses.get(status) ?? 0) + 1);
      }
      const perRequest = (cpuMs(server.pid!) - before) / REQUESTS;
      const seen = [...statuses].map(([status, count]) => `${status} x${count}`).join(', ');
      console.log(`  ${scenario.name.padEnd(56)} ${perRequest.toFixed(2).padStart(7)} ms CPU/request   ${seen}`);
    }
    const idle = await healthzLatency(base, LOAD_SECONDS);
    let attacking = true;
    const attacker = async () => {
      while (attacking) await send(base, SCENARIOS[1]).catch(() => 0);
    };
    const attackers = [attacker(), attacker()];
    const loaded = await healthzLatency(base, LOAD_SECONDS);
    attacking = false;
    await Promise.all(attackers);
    console.log(
      `  GET /healthz idle:                                   p50 ${idle.p50.toFixed(1)} ms, p99 ${idle.p99.toFixed(1)} ms`,
    );
    console.log(
      `  GET /healthz beside 2 clients sending the 320 KB body: p50 ${loaded.p50.toFixed(1)} ms, p99 ${loaded.p99.toFixed(1)} ms`,
    );
  } finally {
    server.kill('SIGTERM');
    rmSync(dataDir, { recursive: true, force: true });
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
