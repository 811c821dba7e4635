/**
 * `npm run bench:ab -- <checkout>`: a paired A/B of this checkout against another built one (its own dist/ and
 * node_modules: a `git worktree` of the commit to compare with, `npm ci` and `npm run build` in it). Both servers run
 * side by side, each seeded as bench/run.ts seeds its one; then every scenario is measured on one server and at once on
 * the other, BENCH_AB_ROUNDS times, the order alternating (A B, B A, ...), so that the VM's drift, which moves a
 * scenario's cost by up to 30 % between runs minutes apart, falls on both sides of each pair alike.
 * Reports, per scenario, each side's server CPU µs per response (median of the rounds) and the change: the median of
 * the rounds' ratios (this / the other), with the quartiles of those ratios, which say how far the change can be
 * trusted (docs/performance.md#paired-ab). BENCH_AB_PROCESS_PAIRS times (2) over, both servers are started afresh and
 * warmed up, in alternating order, and each process pair's median is printed: a process has a speed of its own (the
 * later started ran 3-7 % cheaper in A/A runs here; one in eight ran 15-25 % slower all its life, its heap grown
 * large), which pairs within one process pair cannot cancel.
 * BENCH_AB_TOGETHER=1 measures both servers at the same time instead, each with half the connections: with
 * BENCH_SERVER_CPUS naming one core, both share it, so whatever slows the machine in that moment slows both alike (A/A
 * middle halves 3-7 points wide here, against up to 20 alternating: docs/performance.md#paired-ab).
 * Knobs: bench/run.ts's (BENCH_SCENARIOS, BENCH_CONNECTIONS, BENCH_SERVER_ENV, DATABASE_URL...), and BENCH_DURATION (s
 * per measurement, here 3 by default), BENCH_WARMUP (4), BENCH_AB_ROUNDS (8), BENCH_AB_PROCESS_PAIRS (2),
 * BENCH_AB_SERVER_ENV (more settings for this checkout's server only, e.g. to measure one switch against the same code:
 * `<checkout>` may be this one).
 */
import { resolve } from 'node:path';
import type autocannon from 'autocannon';
import { aligned, measure, Measurement, mid } from './measure';
import { DATABASE, startTarget, Target } from './target';

const ROOT = resolve(__dirname, '..', '..');
const DURATION = Number(process.env.BENCH_DURATION ?? 3);
const WARM_UP = Number(process.env.BENCH_WARMUP ?? 4);
const ROUNDS = Number(process.env.BENCH_AB_ROUNDS ?? 8);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 50);
const ONLY = process.env.BENCH_SCENARIOS ?? 'abcdefghij';
const TOGETHER = process.env.BENCH_AB_TOGETHER === '1';
const PROCESS_PAIRS = Number(process.env.BENCH_AB_PROCESS_PAIRS ?? 2);

/** The q-quantile of values (nearest rank). */
function quantile(values: number[], q: number): number {
  const sorted = [...values].sort((x, y) => x - y);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.round(q * (sorted.length - 1))))];
}

const percent = (ratio: number): string => `${ratio >= 1 ? '+' : ''}${((ratio - 1) * 100).toFixed(1)} %`;

async function main(): Promise<void> {
  const other = process.argv[2];
  if (other === undefined) throw new Error('usage: npm run bench:ab -- <built checkout to compare with>');
  const base = resolve(other);
  console.log(
    `bench A/B: ${DATABASE}, ${base} (A) against ${ROOT} (B), ${CONNECTIONS} connections, ${DURATION} s per ` +
      `measurement, ${ROUNDS} rounds${TOGETHER ? ', both servers at once' : ''}`,
  );
  const extra = process.env.BENCH_AB_SERVER_ENV ?? '';
  const targets: Target[] = [];
  try {
    targets.push(await startTarget(base, ONLY));
    const serverEnv = process.env.BENCH_SERVER_ENV;
    process.env.BENCH_SERVER_ENV = `${serverEnv ?? ''} ${extra}`;
    targets.push(await startTarget(ROOT, ONLY));
    process.env.BENCH_SERVER_ENV = serverEnv;
    const [a, b] = targets;
    // Only what both sides have: an older checkout may lack a scenario's route.
    const names = a.scenarios.map((s) => s.name).filter((name) => b.scenarios.some((s) => s.name === name));
    const scenario = (target: Target, name: string) => target.scenarios.find((s) => s.name === name)!;
    const connections = TOGETHER ? Math.max(1, Math.round(CONNECTIONS / 2)) : CONNECTIONS;
    const once = async (target: Target, name: string, seconds: number, label = name): Promise<Measurement> => {
      const { options, prepared } = scenario(target, name);
      await prepared?.prepare(seconds);
      const load: autocannon.Options = { connections, duration: seconds, ...options };
      return measure(label, load, target.pid());
    };
    const warmUp = async (): Promise<void> => {
      for (const name of names) for (const target of targets) await once(target, name, WARM_UP, 'warm-up');
    };
    await warmUp();

    const perPair = Math.max(1, Math.ceil(ROUNDS / PROCESS_PAIRS));
    const cpu = new Map(
      names.map((name) => [
        name,
        { a: [] as number[], b: [] as number[], ratios: [] as number[], byPair: [] as number[][] },
      ]),
    );
    for (let round = 0; round < ROUNDS; round += 1) {
      if (round > 0 && round % perPair === 0) {
        // Each time in the other order: a server started later ran 3-7 % cheaper in A/A runs here, whichever code it
        // ran.
        const pair = round / perPair;
        for (const target of pair % 2 === 1 ? [...targets].reverse() : targets) await target.restart();
        await warmUp();
      }
      for (const name of names) {
        const order = round % 2 === 0 ? [a, b] : [b, a];
        const [first, second] = TOGETHER
          ? await Promise.all(order.map((target) => once(target, name, DURATION)))
          : [await once(order[0], name, DURATION), await once(order[1], name, DURATION)];
        const [ma, mb] = order[0] === a ? [first, second] : [second, first];
        if (ma.server_cpu_us_per_request === undefined || mb.server_cpu_us_per_request === undefined) continue;
        const entry = cpu.get(name)!;
        entry.a.push(ma.server_cpu_us_per_request);
        entry.b.push(mb.server_cpu_us_per_request);
        const ratio = mb.server_cpu_us_per_request / ma.server_cpu_us_per_request;
        entry.ratios.push(ratio);
        (entry.byPair[Math.floor(round / perPair)] ??= []).push(ratio);
      }
      console.log(`round ${round + 1} of ${ROUNDS} measured`);
    }
    for (const name of names) {
      const pairs = Array.from(cpu.get(name)!.byPair, (ratios) =>
        ratios === undefined ? 'none' : percent(mid(ratios)),
      );
      console.log(`${name}: each process pair's median ${pairs.join(', ')}`);
    }
    const rows = names.map((name) => {
      const { a: as, b: bs, ratios } = cpu.get(name)!;
      return [
        name,
        String(Math.round(mid(as))),
        String(Math.round(mid(bs))),
        percent(mid(ratios)),
        `${percent(quantile(ratios, 0.25))} .. ${percent(quantile(ratios, 0.75))}`,
      ];
    });
    console.log(
      `\nserver CPU µs per response, A: ${base}, B: ${ROOT}\n` +
        aligned(['scenario', 'A µs', 'B µs', 'B vs A (median of pairs)', 'middle half of the pairs'], rows),
    );
  } finally {
    for (const target of targets) await target.close();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
