import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { transformFile } from '@swc/core';
import { TEST_BUILD_DIR_VARIABLE } from '../support/build-directory';

const ROOT = resolve(__dirname, '..', '..');

/**
 * The browser tests have no global set-up (jest.browser.config.js), so the identity provider's worker
 * (test/support/identity-provider.worker.ts, which test/support/identity-provider.ts starts from the test build's
 * test-support/ folder) is compiled here, as global-setup compiles it: with SWC, into a folder inside node_modules/
 * (so that `oidc-provider` resolves from there), named by GATEHOUSE_TEST_BUILD_DIR for this process. Returns its
 * removal.
 */
export async function buildIdentityProviderWorker(): Promise<() => void> {
  const cache = join(ROOT, 'node_modules', '.cache');
  mkdirSync(cache, { recursive: true });
  const buildDir = mkdtempSync(join(cache, 'gatehouse-browser-idp-'));
  mkdirSync(join(buildDir, 'test-support'));
  const { code } = await transformFile(join(ROOT, 'test', 'support', 'identity-provider.worker.ts'), {
    jsc: { parser: { syntax: 'typescript' }, target: 'es2022' },
    module: { type: 'commonjs' },
  });
  writeFileSync(join(buildDir, 'test-support', 'identity-provider.worker.js'), code);
  process.env[TEST_BUILD_DIR_VARIABLE] = buildDir;
  return () => rmSync(buildDir, { recursive: true, force: true });
}
