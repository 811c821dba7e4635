import { execFile } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { transformFile } from '@swc/core';
import { TEST_BUILD_DIR_VARIABLE } from './build-directory';

const ROOT = resolve(__dirname, '..', '..');

/** Set to 1 (by .ci/run, right after `npm run build`): the compiled copy is dist/, copied, when it is up to date. */
const REUSE_DIST_VARIABLE = 'GATEHOUSE_TEST_REUSE_DIST';

/**
 * Jest runs the TypeScript sources in-process, but a worker thread (and test/platform/shutdown.e2e-spec.ts's server)
 * must load compiled JavaScript, as production loads dist/. So once per run, before any suite: src/ compiled exactly as
 * `npm run build` does (tsc -p tsconfig.build.json; or its dist/ copied, REUSE_DIST_VARIABLE), into a private folder (a
 * parallel `npm run build` may be deleting dist/) inside node_modules/ (so that the compiled files resolve their
 * dependencies from there). Its path goes to GATEHOUSE_TEST_BUILD_DIR, which Jest's test processes inherit
 * (build-directory.ts reads it: the apps under test get it as their worker directory). The test-only workers
 * (test/support/*.worker.ts) are compiled with SWC, as Jest compiles all test code, into its test-support/ folder. The
 * folder is removed when Jest exits.
 */
export default async function globalSetup(): Promise<void> {
  const cache = join(ROOT, 'node_modules', '.cache');
  mkdirSync(cache, { recursive: true });
  const buildDir = mkdtempSync(join(cache, 'gatehouse-test-build-'));
  process.once('exit', () => rmSync(buildDir, { recursive: true, force: true }));

  const dist = process.env[REUSE_DIST_VARIABLE] === '1' ? freshDist() : undefined;
  if (dist !== undefined) {
    // CI has just run `npm run build`, which is the same compilation: a copy of it (not the console's bundle).
    cpSync(dist, buildDir, { recursive: true, filter: (source) => source !== join(dist, 'console') });
  } else {
    const tsc = join(ROOT, 'node_modules', '.bin', 'tsc');
    try {
      await promisify(execFile)(tsc, ['-p', join(ROOT, 'tsconfig.build.json'), '--outDir', buildDir], { cwd: ROOT });
    } catch (error) {
      throw new Error(`build failed: ${(error as { stdout?: string }).stdout ?? String(error)}`, { cause: error });
    }
  }

  const testWorkers = join(buildDir, 'test-support');
  mkdirSync(testWorkers);
  for (const file of readdirSync(__dirname).filter((name) => name.endsWith('.worker.ts'))) {
    const { code } = await transformFile(join(__dirname, file), {
      jsc: { parser: { syntax: 'typescript' }, target: 'es2022' },
      module: { type: 'commonjs' },
    });
    writeFileSync(join(testWorkers, file.replace(/\.ts$/, '.js')), code);
  }
  // The verifier library, which resource-server.worker.ts runs in processes of their own: verifier/src/ compiled the
  // same way into verifier/src/ beside test-support/ (`jose` resolves from the root node_modules).
  const verifierSources = join(ROOT, 'verifier', 'src');
  for (const file of readdirSync(verifierSources, { recursive: true, encoding: 'utf8' })) {
    if (!file.endsWith('.ts') || file.endsWith('.d.ts')) continue;
    const target = join(buildDir, 'verifier', 'src', file.replace(/\.ts$/, '.js'));
    mkdirSync(dirname(target), { recursive: true });
    const { code } = await transformFile(join(verifierSources, file), {
      jsc: { parser: { syntax: 'typescript' }, target: 'es2022' },
      module: { type: 'commonjs' },
    });
    writeFileSync(target, code);
  }

  // The example MCP server (test/support/mcp-server-process.ts runs it): examples/mcp-server/src/ into
  // examples/mcp-server/src/, so that its import of ../../../verifier/src finds the one compiled above.
  await compileFolder(join(ROOT, 'examples', 'mcp-server', 'src'), join(buildDir, 'examples', 'mcp-server', 'src'));

  process.env[TEST_BUILD_DIR_VARIABLE] = buildDir;
}

/**
 * dist/, when `npm run build` wrote it after the last change to src/ and tsconfig*.json (its main.js is newer than each
 * of them); else undefined, and the set-up compiles src/ itself.
 */
function freshDist(): string | undefined {
  const dist = join(ROOT, 'dist');
  const built = statSync(join(dist, 'main.js'), { throwIfNoEntry: false })?.mtimeMs;
  if (built === undefined) return undefined;
  const sources = readdirSync(join(ROOT, 'src'), { recursive: true, encoding: 'utf8' })
    .filter((file) => !file.endsWith('.spec.ts')) // not built (tsconfig.build.json)
    .map((file) => join('src', file));
  for (const file of [...sources, 'tsconfig.json', 'tsconfig.build.json']) {
    if (statSync(join(ROOT, file)).mtimeMs > built) return undefined;
  }
  return dist;
}

async function compileFolder(from: string, to: string): Promise<void> {
  mkdirSync(to, { recursive: true });
  for (const file of readdirSync(from).filter((name) => name.endsWith('.ts'))) {
    const { code } = await transformFile(join(from, file), {
      jsc: { parser: { syntax: 'typescript' }, target: 'es2022' },
      module: { type: 'commonjs' },
    });
    writeFileSync(join(to, file.replace(/\.ts$/, '.js')), code);
  }
}
