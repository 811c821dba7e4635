// `npm run bench:timings`: measurements made through the test app (bench/timings/), printed for the
// figures in docs/operations.md and docs/performance.md, never asserted. Not part of `npm test`; one
// suite at a time, so that they do not time each other.
const base = require('./jest.config.js');

module.exports = {
  ...base,
  testRegex: 'bench/timings/.*\\.bench\\.ts$',
  testTimeout: 300_000,
  maxWorkers: 1,
};
