// The console's browser tests (test/browser/, docs/console.md#tests): headless Chromium from Debian's
// `chromium` package, driven by playwright-core, against the server built by `npm run build`.
// One server and one browser for the whole run, so they are a project of their own, run by
// `npm run test:browser` after the build (not by `npm test`).
const base = require('./jest.config.js');

module.exports = {
  testEnvironment: 'node',
  rootDir: '.',
  testRegex: 'test/browser/.*\\.browser-spec\\.ts$',
  transform: base.transform,
  transformIgnorePatterns: base.transformIgnorePatterns,
  // The compiled example MCP server and verifier (mcp-consent.browser-spec.ts runs them, as the e2e suites do).
  globalSetup: base.globalSetup,
  testTimeout: 60_000,
  maxWorkers: 1,
};
