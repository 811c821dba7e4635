// The slowest suites of Jest runs, from their --json reports: where a run's minutes go (.ci/run prints them).
//   node scripts/slowest-suites.mjs <count> <report.json> <label> [<report.json> <label> ...]
// A report may also be given as "<report.json> <label>" in one argument. A missing report is one line, not a failure.
import { existsSync, readFileSync } from 'node:fs';
import { relative } from 'node:path';

const [count, ...rest] = process.argv.slice(2);
const runs = rest.flatMap((argument) => argument.split(' '));
for (let i = 0; i + 1 < runs.length; i += 2) {
  const [file, label] = [runs[i], runs[i + 1]];
  if (!existsSync(file)) {
    console.log(`${label}: no report (${file})`);
    continue;
  }
  const report = JSON.parse(readFileSync(file, 'utf8'));
  const suites = report.testResults
    .map((suite) => ({
      name: relative(process.cwd(), suite.name),
      seconds: (suite.endTime - suite.startTime) / 1000,
      tests: suite.assertionResults?.length ?? 0,
      failed: suite.status !== 'passed',
    }))
    .sort((a, b) => b.seconds - a.seconds);
  const wall =
    suites.length === 0 ? 0 : (Math.max(...report.testResults.map((s) => s.endTime)) - report.startTime) / 1000;
  const total = suites.reduce((sum, suite) => sum + suite.seconds, 0);
  console.log(
    `${label}: the ${Math.min(Number(count), suites.length)} slowest of ${suites.length} suites` +
      ` (${total.toFixed(0)} s of suite time in ${wall.toFixed(0)} s)`,
  );
  for (const suite of suites.slice(0, Number(count))) {
    const mark = suite.failed ? '  FAILED' : '';
    console.log(
      `  ${suite.seconds.toFixed(1).padStart(6)} s  ${String(suite.tests).padStart(4)} tests  ${suite.name}${mark}`,
    );
  }
}
