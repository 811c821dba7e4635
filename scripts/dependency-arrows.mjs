// The dependency arrows of README.md and docs/architecture.md, generated from MAY_USE in .dependency-cruiser.mjs
// (the table `depcruise` enforces), so that the docs cannot drift from the rules.
//   node scripts/dependency-arrows.mjs          rewrites the blocks
//   node scripts/dependency-arrows.mjs --check  fails (exit 1) when a block differs (npm run lint runs it)
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { MAY_USE } from '../.dependency-cruiser.mjs';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const BEGIN = '<!-- dependency arrows: generated from MAY_USE in .dependency-cruiser.mjs (npm run docs:arrows) -->';
const END = '<!-- end of dependency arrows -->';

const width = Math.max(...Object.keys(MAY_USE).map((name) => name.length));
const lines = Object.entries(MAY_USE)
  .sort(([a], [b]) => a.localeCompare(b))
  .map(([name, uses]) => `${name.padEnd(width)} ──> ${uses.length === 0 ? '(no feature module)' : uses.join(', ')}`);
const block = [
  BEGIN,
  '',
  '```text',
  ...lines,
  `${'every module'.padEnd(width)} ──> common/, config/, database/`,
  '```',
  '',
  END,
].join('\n');

let stale = [];
for (const file of ['README.md', 'docs/architecture.md']) {
  const path = join(ROOT, file);
  const text = readFileSync(path, 'utf8');
  const start = text.indexOf(BEGIN);
  const end = text.indexOf(END);
  if (start < 0 || end < start) {
    console.error(`${file}: no dependency arrows block (${BEGIN} ... ${END})`);
    process.exitCode = 1;
    continue;
  }
  const updated = text.slice(0, start) + block + text.slice(end + END.length);
  if (updated === text) continue;
  if (process.argv.includes('--check')) stale.push(file);
  else writeFileSync(path, updated);
}
if (stale.length > 0) {
  console.error(`dependency arrows out of date in ${stale.join(', ')}: run npm run docs:arrows`);
  process.exitCode = 1;
}
