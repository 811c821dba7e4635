import type { Circus } from '@jest/types';
import { TestEnvironment } from 'jest-environment-node';
import { SET_UP_TIMEOUT_MS } from './timeouts';

type Block = Circus.DescribeBlock;

/**
 * Jest's Node environment (jest.config.js) with two rules for suite set-up:
 *
 * - A `beforeAll` or `afterAll` hook that does not say its time-out gets {@link SET_UP_TIMEOUT_MS}, not the 5 s of a
 *   test: such hooks start applications, servers, identity providers and child processes, which take seconds on a
 *   busy machine. A hook that says its own time-out keeps it; tests keep Jest's 5 s.
 * - A `beforeAll` that fails is reported once, as the suite's failure ("Test suite failed to run", with the hook's
 *   error), and the tests it set up are skipped instead of each failing with the same error. An `afterAll` of that
 *   block that then trips over what was never set up (a TypeError on `undefined`) is part of the same failure and is
 *   not reported again; any other error of a tear-down is.
 */
export default class SuiteEnvironment extends TestEnvironment {
  private readonly failedSetUp = new Set<Block>();

  handleTestEvent(event: Circus.Event, state: Circus.State): void {
    if (event.name === 'add_hook' && (event.hookType === 'beforeAll' || event.hookType === 'afterAll')) {
      const hook = state.currentDescribeBlock.hooks.at(-1);
      if (hook !== undefined && hook.fn === event.fn && hook.timeout === undefined) hook.timeout = SET_UP_TIMEOUT_MS;
      return;
    }
    if (event.name !== 'hook_failure' || event.describeBlock === undefined) return;
    const block = event.describeBlock;
    if (event.hook.type === 'beforeAll') {
      this.failedSetUp.add(block);
      for (const test of testsUnder(block)) {
        test.errors = test.errors.filter((entry) => (Array.isArray(entry) ? entry[0] : entry) !== event.error);
        if (test.errors.length === 0) test.mode = 'skip';
      }
      const context = `beforeAll of ${pathOf(block)} failed`;
      state.unhandledErrors.push(described(event.error, event.hook.asyncError, context));
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
