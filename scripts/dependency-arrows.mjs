// The dependency arrows of docs/architecture.md, generated from MAY_USE in .dependency-cruiser.mjs
// (the table `depcruise` enforces), and the ports of docs/architecture.md, generated from the `provide:` entries of
// the *.module.ts files, so that the docs cannot drift from the rules or the wiring.
//   node scripts/dependency-arrows.mjs          rewrites the blocks
//   node scripts/dependency-arrows.mjs --check  fails (exit 1) when a block differs (npm run lint runs it)
// It also fails when a file under src/ uses ModuleRef: a look-up at run time is an arrow nothing shows.
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
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

// A port: a token that one module's file declares and another module's *.module.ts provides (`provide: TOKEN`).
const SRC = join(ROOT, 'src');
const sourceFiles = (dir) =>
  readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory()
      ? sourceFiles(join(dir, entry.name))
      : entry.name.endsWith('.ts') && !entry.name.endsWith('.spec.ts')
        ? [join(dir, entry.name)]
        : [],
  );
const folderOf = (file) => relative(SRC, file).split('/')[0];
const ports = new Map();
for (const file of sourceFiles(SRC)) {
  const text = readFileSync(file, 'utf8');
  if (/\bModuleRef\b/.test(text)) {
    console.error(
      `${relative(ROOT, file)}: ModuleRef look-ups hide an arrow; declare a port (docs/architecture.md#ports)`,
    );
    process.exitCode = 1;
  }
  if (!file.endsWith('.module.ts') || !file.slice(SRC.length + 1).includes('/')) continue;
  const from = new Map();
  for (const [, names, source] of text.matchAll(/import\s*(?:type\s*)?\{([^}]*)\}\s*from\s*'(\.[^']*)'/g)) {
    for (const name of names.split(',').map((part) => part.replace(/^.*\sas\s/, '').trim()))
      if (name) from.set(name, folderOf(resolve(dirname(file), source)));
  }
  for (const [, token] of text.matchAll(/\bprovide:\s*([A-Za-z_$][\w$]*)/g)) {
    const owner = from.get(token);
    const provider = folderOf(file);
    if (owner !== undefined && owner !== provider) ports.set(`${provider} ${owner} ${token}`, [provider, owner, token]);
  }
}
const PORTS_BEGIN = '<!-- ports: generated from the provide: entries of src/*/*.module.ts (npm run docs:arrows) -->';
const PORTS_END = '<!-- end of ports -->';
const portLines = [...ports.values()]
  .sort((a, b) => a.join(' ').localeCompare(b.join(' ')))
  .map(([provider, owner, token]) => `${provider.padEnd(width)} ··> ${owner}: provides ${token}`);
const portsBlock = [PORTS_BEGIN, '', '```text', ...portLines, '```', '', PORTS_END].join('\n');

const blocks = [
  { begin: BEGIN, end: END, block, files: ['docs/architecture.md'] },
  { begin: PORTS_BEGIN, end: PORTS_END, block: portsBlock, files: ['docs/architecture.md'] },
];
const updates = new Map();
for (const { begin, end, block: generated, files } of blocks) {
  for (const file of files) {
    const text = updates.get(file) ?? readFileSync(join(ROOT, file), 'utf8');
    const start = text.indexOf(begin);
    const stop = text.indexOf(end);
    if (start < 0 || stop < start) {
      console.error(`${file}: no generated block (${begin} ... ${end})`);
      process.exitCode = 1;
      continue;
    }
    updates.set(file, text.slice(0, start) + generated + text.slice(stop + end.length));
  }
}
const stale = [];
for (const [file, updated] of updates) {
  if (updated === readFileSync(join(ROOT, file), 'utf8')) continue;
  if (process.argv.includes('--check')) stale.push(file);
  else writeFileSync(join(ROOT, file), updated);
}
if (stale.length > 0) {
  console.error(`dependency arrows or ports out of date in ${stale.join(', ')}: run npm run docs:arrows`);
  process.exitCode = 1;
}
