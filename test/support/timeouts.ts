/**
 * How long a suite's set-up or tear-down (`beforeAll`, `afterAll`) may take: it starts applications, servers,
 * identity providers and child processes, each a second or more on a busy two-core machine. The test environment
 * (test/support/environment.ts) gives it to every such hook that does not say its own; suites that start several
 * processes say it explicitly.
 */
export const SET_UP_TIMEOUT_MS = 60_000;
