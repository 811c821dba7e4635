// Nest 12 packages are ESM-only. Node 20.19 loads them from our CommonJS build through
// require(esm), but Jest's module runtime only does that on Node 24.9+, so under Jest we let
// SWC compile those packages to CommonJS (cached after the first run).
const esmPackages = [
  '@nestjs',
  'file-type',
  'strtok3',
  'token-types',
  '@tokenizer',
  '@borewit',
  'uint8array-extras',
  'uid',
  // The independent OAuth/JOSE clients the interop tests use.
  'jose',
  'oauth4webapi',
  'openid-client',
];
module.exports = {
  // Node's, with set-up hooks given SET_UP_TIMEOUT_MS and a failed set-up reported once (test/support/environment.ts).
  testEnvironment: '<rootDir>/test/support/environment.ts',
  rootDir: '.',
  testRegex: '.*\\.(spec|e2e-spec)\\.ts$',
  transform: { '^.+\\.(t|j)s$': ['@swc/jest'] },
  transformIgnorePatterns: [`/node_modules/(?!(${esmPackages.join('|')})/)`],
  // Most suites wait on I/O: HTTP round trips, databases, child processes (identity providers, gateways). On two
  // cores Jest's default (cores - 1) is one worker, which leaves a core idle while a suite waits; three workers finish
  // the suite in about half the time, even with another process keeping a core busy (docs/architecture.md#tests).
  maxWorkers: 3,
  // A test is a few requests, but on a busy machine a request can wait a second for the CPU: 30 s before a test is
  // reported as hung. Set-up and tear-down hooks get SET_UP_TIMEOUT_MS (test/support/timeouts.ts).
  testTimeout: 30_000,
  // Compiles the project once per run: worker threads load compiled JavaScript, as in production.
  globalSetup: '<rootDir>/test/support/global-setup.ts',
};
