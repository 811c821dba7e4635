// Checks the hand-written maps of the docs against what they describe, so that they cannot drift (npm run lint runs
// it; the dependency arrows are generated instead: scripts/dependency-arrows.mjs). Each map has columns written by hand
// (permission, success, a folder's contents, a decision's short name), so it is checked, not generated:
//   - docs/api.md's route table lists exactly the routes of client/openapi.json, and its links reach a heading;
//   - the folder map of docs/architecture.md names every folder under src/ and every top-level folder of
//     the repository, and nothing that does not exist;
//   - docs/adr/README.md links every docs/adr/NNNN-*.md exactly once, in order;
//   - README.md and docs/**/*.md stay under WORD_LIMIT words together (wc -w's count), so that they stay read;
//   - every relative link of README.md and docs/**/*.md leads to a file, and its #anchor to a heading there;
//   - every `<page>.md#anchor` the code names (src/, test/, verifier/, scripts/, deploy/) leads to a heading.
//   node scripts/docs-check.mjs  fails (exit 1) with one line per difference
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const read = (file) => readFileSync(join(ROOT, file), 'utf8');
const problems = [];

/** The lines of the first block of `marker` (a table row prefix or a code fence) after `heading`. */
function blockAfter(text, heading, marker) {
  const lines = text.split('\n');
  let i = lines.indexOf(heading);
  if (i < 0) throw new Error(`no "${heading}" heading`);
  while (i < lines.length && !lines[i].startsWith(marker)) i++;
  if (marker === '|') return lines.slice(i, i + lines.slice(i).findIndex((line) => !line.startsWith('|')));
  const end = lines.indexOf('```', i + 1);
  return lines.slice(i + 1, end);
}

function compare(where, what, found, expected) {
  for (const item of expected) if (!found.includes(item)) problems.push(`${where}: ${what} ${item} missing`);
  for (const item of new Set(found)) {
    if (!expected.includes(item)) problems.push(`${where}: ${what} ${item} does not exist`);
    else if (found.indexOf(item) !== found.lastIndexOf(item)) problems.push(`${where}: ${what} ${item} listed twice`);
  }
}

/** GitHub's anchors of a markdown page: lower case, punctuation dropped, spaces to hyphens, repeats numbered. */
function anchors(text) {
  const seen = new Map();
  const slugs = new Set();
  for (const [, title] of text.replace(/^```[\s\S]*?^```/gm, '').matchAll(/^#{1,6} (.*)$/gm)) {
    const slug = title
      .toLowerCase()
      .replace(/[^\p{L}\p{N} _-]/gu, '')
      .replaceAll(' ', '-');
    const count = seen.get(slug) ?? 0;
    seen.set(slug, count + 1);
    slugs.add(count === 0 ? slug : `${slug}-${count}`);
  }
  return slugs;
}

// 1. The route table of docs/api.md against the OpenAPI document. The document does not describe itself: its two
// routes are the only ones the table may add. "any method" is what Nest's @All() registers, as @nestjs/swagger lists it.
const NOT_IN_DOCUMENT = ['GET /openapi.json', 'GET /docs'];
const ANY_METHOD = ['GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'HEAD', 'SEARCH'];
const api = read('docs/api.md');
const documented = Object.entries(JSON.parse(read('client/openapi.json')).paths).flatMap(([path, operations]) =>
  Object.keys(operations).map((method) => `${method.toUpperCase()} ${path}`),
);
const listed = [];
const links = [];
for (const row of blockAfter(api, '# HTTP API', '|').slice(2)) {
  const cell = row.split('|')[1];
  const spans = [...cell.matchAll(/`([^`]+)`/g)].map(([, span]) => span);
  if (cell.trim().startsWith('any method'))
    listed.push(...spans.flatMap((path) => ANY_METHOD.map((m) => `${m} ${path}`)));
  else listed.push(...spans);
  for (const [, inline, label] of row.matchAll(/\]\(([^)]+)\)|\]\[([^\]]+)\]/g)) {
    const target = inline ?? api.match(new RegExp(`^\\[${label}\\]: (\\S+)$`, 'm'))?.[1];
    if (target === undefined) problems.push(`docs/api.md: route table link [${label}] has no definition`);
    else links.push(target);
  }
}
compare('docs/api.md route table', 'route', listed, [...documented, ...NOT_IN_DOCUMENT]);
for (const link of new Set(links)) {
  const [file, anchor] = link.split('#');
  const page = file === '' ? api : existsSync(join(ROOT, 'docs', file)) ? read(join('docs', file)) : undefined;
  if (page === undefined || (anchor !== undefined && !anchors(page).has(anchor))) {
    problems.push(`docs/api.md: route table link ${link} leads nowhere`);
  }
}

// 2. The folder maps. An entry is a line indented 0, 2 or 4 spaces (descriptions continue further in); its first word
// is a path, or a list of files ("main.ts, app.module.ts"), under the entry one level up.
const sourceFolders = readdirSync(join(ROOT, 'src'), { withFileTypes: true })
  .filter((entry) => entry.isDirectory())
  .map((entry) => `src/${entry.name}/`);
const topFolders = [
  ...new Set(
    execFileSync('git', ['ls-files'], { cwd: ROOT, encoding: 'utf8' })
      .split('\n')
      .filter((file) => file.includes('/') && !file.startsWith('.'))
      .map((file) => file.slice(0, file.indexOf('/') + 1)),
  ),
];
for (const [file, heading] of [['docs/architecture.md', '## Folder map']]) {
  const parents = [];
  const top = [];
  const underSource = [];
  for (const line of blockAfter(read(file), heading, '```')) {
    const depth = line.search(/\S/) / 2;
    if (![0, 1, 2].includes(depth)) continue;
    const paths = line
      .trim()
      .split(/\s{2,}/)[0]
      .split(', ')
      .map((path) => (depth === 0 ? '' : parents[depth - 1]) + path);
    for (const path of paths) {
      if (!existsSync(join(ROOT, path))) problems.push(`${file} folder map: ${path} does not exist`);
    }
    parents.splice(depth, Infinity, paths[0]);
    if (depth === 0) top.push(paths[0].slice(0, paths[0].indexOf('/') + 1));
    if (depth === 1 && paths[0].startsWith('src/') && paths[0].endsWith('/')) underSource.push(paths[0]);
  }
  compare(`${file} folder map`, 'folder', underSource, sourceFolders);
  compare(`${file} folder map`, 'top-level folder', [...new Set(top)], topFolders);
}

// 3. The decision records' index: every record linked once, by its number, in order.
const records = readdirSync(join(ROOT, 'docs/adr')).filter((name) => /^\d{4}-.*\.md$/.test(name));
const indexed = [];
for (const [, number, target] of read('docs/adr/README.md').matchAll(/^\| \[(\d{4})\]\(([^)]+)\)/gm)) {
  if (!target.startsWith(`${number}-`)) problems.push(`docs/adr/README.md: [${number}] links ${target}`);
  indexed.push(target);
}
compare('docs/adr/README.md', 'record', indexed, records);
if (indexed.join() !== [...indexed].sort().join()) problems.push('docs/adr/README.md: records out of order');

// 4. The length of the docs: each thing said once, and linked.
const WORD_LIMIT = 60000;
const markdown = (folder) =>
  readdirSync(join(ROOT, folder), { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory()
      ? markdown(join(folder, entry.name))
      : entry.name.endsWith('.md')
        ? [join(folder, entry.name)]
        : [],
  );
const words = ['README.md', ...markdown('docs')].reduce(
  (sum, file) =>
    sum +
    read(file)
      .split(/\s+/)
      .filter((word) => word !== '').length,
  0,
);
if (words > WORD_LIMIT) problems.push(`README.md and docs/: ${words} words, more than ${WORD_LIMIT}`);

// 5. Every relative link of the docs leads somewhere (code blocks aside; a link with a scheme is not checked).
const withoutCode = (text) => text.replace(/^```[\s\S]*?^```/gm, '');
for (const file of ['README.md', ...markdown('docs')]) {
  const text = withoutCode(read(file));
  const targets = [
    ...[...text.matchAll(/\]\(([^)\s]+)\)/g)].map(([, target]) => target),
    ...[...text.matchAll(/^\[[^\]]+\]: (\S+)$/gm)].map(([, target]) => target),
  ];
  for (const target of new Set(targets)) {
    if (/^[a-z][a-z+.-]*:/.test(target)) continue;
    const [path, anchor] = target.split('#');
    const linked = path === '' ? file : join(dirname(file), path);
    if (!existsSync(join(ROOT, linked))) problems.push(`${file}: link ${target} leads to no file`);
    else if (anchor !== undefined && linked.endsWith('.md') && !anchors(read(linked)).has(anchor)) {
      problems.push(`${file}: link ${target} leads to no heading`);
    }
  }
}

// 6. The pages and anchors the code names in its comments: `docs/<page>.md#<anchor>`, or a page under docs/ or docs/adr/.
const code = execFileSync('git', ['ls-files', 'src', 'test', 'verifier', 'scripts', 'deploy', 'compose.yaml'], {
  cwd: ROOT,
  encoding: 'utf8',
})
  .split('\n')
  .filter((file) => /\.(ts|mjs|js|sh|yaml)$/.test(file) && !file.includes('node_modules'));
for (const file of code) {
  for (const [reference, page, anchor] of read(file).matchAll(/([\w./-]+\.md)#([\w-]+)/g)) {
    const linked = [page, `docs/${page}`, `docs/adr/${page}`].find((path) => existsSync(join(ROOT, path)));
    if (linked === undefined) problems.push(`${file}: ${reference} names no page`);
    else if (!anchors(read(linked)).has(anchor)) problems.push(`${file}: ${reference} leads to no heading`);
  }
}

for (const problem of new Set(problems)) console.error(problem);
if (problems.length > 0) process.exitCode = 1;
