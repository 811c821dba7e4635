// The console's browser tests (test/browser/, docs/console.md#tests): headless Chromium from Debian's
// `chromium` package, driven by playwright-core, against the server built by `npm run build`.
// Each spec file starts its own server and browser, so they are a project of their own, run by
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
  // Two files at a time: a spec waits on its server and its browser as much as it computes, so one file at a time left
  // a core of a two-core machine idle (docs/adr/0046-ci-proves-each-thing-once.md).
  maxWorkers: 2,
};
