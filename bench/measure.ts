import { readFileSync } from 'node:fs';
import autocannon from 'autocannon';

/** One measurement of one scenario: autocannon's figures and the server's CPU time per response. */
export interface Measurement {
  name: string;
  requests_per_second: number;
  p50_ms: number;
  p99_ms: number;
  errors: number;
  non_2xx: number;
  ratio_to_baseline?: number;
  /**
   * 1/throughput minus (a)'s: what the route adds to a request, in µs of server time, while the
   * server's event loop is the bottleneck (it is here: ~100 % of a core, the load generator ~15 %).
   * Unlike the ratio it does not move when the baseline itself gets faster or slower.
   */
  added_us_per_request?: number;
  /**
   * The server process's CPU time (every thread, user and system) per response, in µs. Unlike the
   * throughput it hardly moves when other work on the machine (a neighbour on a shared VM) takes CPU
   * from the server: time the server waits for a core is not counted. Not the database's time.
   */
  server_cpu_us_per_request?: number;
}

/** CPU time (user + system, every thread) the process has used so far, in ms; Linux only (/proc, 100 ticks a second). */
export function cpuMsOf(pid: number | undefined): number | undefined {
  if (pid === undefined) return undefined;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // After "pid (comm) ": state is field 3, so utime (14) and stime (15) are at 11 and 12.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return undefined;
  }
}

/** The q-quantile of sorted values, to 0.1 ms. */
function quantile(sorted: Float64Array, q: number): number {
  if (sorted.length === 0) return 0;
  return Math.round(sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] * 10) / 10;
}

/** The middle value (the mean of the two middle ones for an even count). */
export function mid(values: number[]): number {
  const sorted = [...values].sort((x, y) => x - y);
  const half = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[half] : (sorted[half - 1] + sorted[half]) / 2;
}

/**
 * Drives the server whose process is `serverPid` with autocannon for `options` (connections and duration included) and
 * measures it. Every response's time is kept to the microsecond: autocannon's own percentiles are whole milliseconds,
 * too coarse to tell a 10 % change of a 5 ms median.
 */
export function measure(
  name: string,
  options: autocannon.Options,
  serverPid: number | undefined,
): Promise<Measurement> {
  const times: number[] = [];
  const cpuBefore = cpuMsOf(serverPid);
  return new Promise((done, fail) => {
    const instance = autocannon(options, (error, result) => {
      if (error) return fail(error instanceof Error ? error : new Error(String(error)));
      const cpuAfter = cpuMsOf(serverPid);
      if (result.non2xx > 0 && name !== 'warm-up') {
        console.warn(`${name}: non-2xx answers by status: ${JSON.stringify(result.statusCodeStats)}`);
      }
      const sorted = Float64Array.from(times).sort();
      done({
        name,
        requests_per_second: Math.round(result.requests.average),
        p50_ms: quantile(sorted, 0.5),
        p99_ms: quantile(sorted, 0.99),
        errors: result.errors + result.timeouts,
        non_2xx: result.non2xx,
        server_cpu_us_per_request:
          cpuBefore === undefined || cpuAfter === undefined || times.length === 0
            ? undefined
            : ((cpuAfter - cpuBefore) * 1000) / times.length,
      });
    });
    instance.on('response', (_client: unknown, _status: number, _bytes: number, responseTime: number) => {
      times.push(responseTime);
    });
  });
}

/** Per field, the median over the rounds (rounds of one scenario). */
export function median(rounds: Measurement[]): Measurement {
  return {
    name: rounds[0].name,
    requests_per_second: Math.round(mid(rounds.map((r) => r.requests_per_second))),
    p50_ms: Math.round(mid(rounds.map((r) => r.p50_ms)) * 100) / 100,
    p99_ms: Math.round(mid(rounds.map((r) => r.p99_ms)) * 100) / 100,
    errors: rounds.reduce((sum, r) => sum + r.errors, 0),
    non_2xx: rounds.reduce((sum, r) => sum + r.non_2xx, 0),
    server_cpu_us_per_request: rounds.every((r) => r.server_cpu_us_per_request !== undefined)
      ? Math.round(mid(rounds.map((r) => r.server_cpu_us_per_request!)))
      : undefined,
  };
}

/** A Markdown table whose columns line up in a terminal too. */
export function aligned(header: string[], lines: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i].length)));
  const fmt = (cells: string[]): string => `| ${cells.map((c, i) => c.padEnd(widths[i])).join(' | ')} |`;
  return [fmt(header), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...lines.map(fmt)].join('\n');
}
