import type { Circus } from '@jest/types';
import { TestEnvironment } from 'jest-environment-node';
import { CLOSE_LEFTOVERS } from './leftovers';
import { SET_UP_TIMEOUT_MS } from './timeouts';

type Block = Circus.DescribeBlock;

/**
 * Jest's Node environment (jest.config.js) with three rules for a suite's set-up and tear-down:
 *
 * - A `beforeAll` or `afterAll` hook that does not say its time-out gets {@link SET_UP_TIMEOUT_MS}, not the 5 s of a
 *   test: such hooks start applications, servers, identity providers and child processes, which take seconds on a
 *   busy machine. A hook that says its own time-out keeps it; tests keep Jest's 5 s.
 * - A `beforeAll` that fails is reported once: the first test it set up fails with the hook's error ("beforeAll of
 *   ... failed: ..."), the others are skipped instead of each failing with the same error. (Not as an error of the
 *   file: Jest hides those of a file whose every test is skipped.) An `afterAll` of that block that then trips over
 *   what was never set up (a TypeError on `undefined`) is part of the same failure and is not reported again; any
 *   other error of a tear-down is.
 * - After the file's last hook, before Jest tears its modules down, what it started and did not close is closed
 *   (test/support/leftovers.ts): an application still booting when its `beforeAll` timed out would otherwise open its
 *   database after the tear-down ("require(...) is not a function") and keep the worker from exiting.
 */
export default class SuiteEnvironment extends TestEnvironment {
  private readonly failedSetUp = new Set<Block>();

  async handleTestEvent(event: Circus.Event, state: Circus.State): Promise<void> {
    if (event.name === 'add_hook' && (event.hookType === 'beforeAll' || event.hookType === 'afterAll')) {
      const hook = state.currentDescribeBlock.hooks.at(-1);
      if (hook !== undefined && hook.fn === event.fn && hook.timeout === undefined) hook.timeout = SET_UP_TIMEOUT_MS;
      return;
    }
    if (event.name === 'run_finish') {
      const close = (this.global as Record<symbol, unknown>)[CLOSE_LEFTOVERS];
      if (typeof close === 'function') await (close as () => Promise<void>)();
      return;
    }
    if (event.name !== 'hook_failure' || event.describeBlock === undefined) return;
    const block = event.describeBlock;
    if (event.hook.type === 'beforeAll') {
      this.failedSetUp.add(block);
      const tests = testsUnder(block);
      for (const test of tests) {
        test.errors = test.errors.filter((entry) => (Array.isArray(entry) ? entry[0] : entry) !== event.error);
      }
      const error = described(event.error, event.hook.asyncError, `beforeAll of ${pathOf(block)} failed`);
      const reporter = tests.find((test) => test.errors.length === 0 && runs(test, state));
      if (reporter === undefined) state.unhandledErrors.push(error);
      else reporter.errors.push(error);
      for (const test of tests) if (test.errors.length === 0) test.mode = 'skip';
    } else if (event.hook.type === 'afterAll' && this.setUpFailedAt(block) && isCascade(event.error)) {
      const at = state.unhandledErrors.findIndex((entry) => (Array.isArray(entry) ? entry[0] : entry) === event.error);
      if (at >= 0) state.unhandledErrors.splice(at, 1);
    }
  }

  private setUpFailedAt(block: Block | undefined): boolean {
    for (let at = block; at !== undefined; at = at.parent) if (this.failedSetUp.has(at)) return true;
    return false;
  }
}

function testsUnder(block: Block): Circus.TestEntry[] {
  return block.children.flatMap((child) => (child.type === 'test' ? [child] : testsUnder(child)));
}

/** Whether Jest runs `test` (not skipped by mode, `.only` elsewhere or `-t`): the one to carry a set-up's failure. */
function runs(test: Circus.TestEntry, state: Circus.State): boolean {
  if (test.mode === 'skip' || test.mode === 'todo') return false;
  if (state.hasFocusedTests && test.mode !== 'only') return false;
  if (state.testNamePattern == null) return true;
  const names: string[] = [test.name];
  for (let at: Block | undefined = test.parent; at?.parent !== undefined; at = at.parent) names.unshift(at.name);
  return state.testNamePattern.test(names.join(' '));
}

function pathOf(block: Block): string {
  const names: string[] = [];
  for (let at: Block | undefined = block; at?.parent !== undefined; at = at.parent) names.unshift(at.name);
  return names.length === 0 ? 'the file' : `"${names.join(' > ')}"`;
}

/**
 * The hook's error with `context` before its message; for a time-out (Jest rejects with a string) the error made where
 * the hook was declared, so that the report points at the hook. (Errors of the suite's realm are not `instanceof
 * Error` here.)
 */
function described(error: unknown, declared: Error, context: string): Error {
  const thrown = error as { message?: unknown; stack?: unknown } | null;
  const target =
    typeof thrown === 'object' && thrown !== null && typeof thrown.message === 'string' ? (thrown as Error) : declared;
  const message = `${context}: ${target === declared ? String(error) : target.message}`;
  const frames =
    typeof target.stack === 'string' ? target.stack.split('\n').filter((line) => /^\s+at /.test(line)) : [];
  target.message = message;
  target.stack = [`${target.name}: ${message}`, ...frames].join('\n');
  return target;
}

/** What an `afterAll` throws when its `beforeAll` never assigned what it closes. */
function isCascade(error: unknown): boolean {
  const { name, message } = (error ?? {}) as { name?: unknown; message?: unknown };
  return (
    name === 'TypeError' && typeof message === 'string' && /^Cannot read propert(y|ies) .*of undefined/.test(message)
  );
}
