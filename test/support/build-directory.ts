import { workerFile } from '../../src/common/batching-thread';

/**
 * Names the folder of the compiled copy of src/ that the global set-up builds (test/support/global-setup.ts): Jest runs
 * the TypeScript sources, but worker threads and child processes load compiled JavaScript, as production loads dist/.
 */
export const TEST_BUILD_DIR_VARIABLE = 'GATEHOUSE_TEST_BUILD_DIR';

/** The compiled copy's folder; the applications under test get it as their worker directory. */
export function testBuildDirectory(): string {
  const directory = process.env[TEST_BUILD_DIR_VARIABLE];
  if (directory === undefined) throw new Error(`${TEST_BUILD_DIR_VARIABLE} is not set: run through Jest`);
  return directory;
}

/** A compiled worker file of the copy by its path under src/ (`auth/signing.worker.js`). */
export function testWorkerFile(path: string): string {
  return workerFile(path, testBuildDirectory());
}
