import { Verifier, VerifyError } from '../../verifier/src/index';
import { pause } from './wait';

/** What the verifier answers for `token` now: 'accepted' or the refusal's code. */
export async function refusal(verifier: Verifier, token: string, scopes: string[] = []): Promise<string> {
  try {
    await verifier.verify(token, { scopes });
    return 'accepted';
  } catch (error) {
    return error instanceof VerifyError ? error.code : String(error);
  }
}

/** Milliseconds until `verify` answers `code`, checking every 5 ms; an answer `never` on the way fails at once. */
export async function msUntil(
  verifier: Verifier,
  token: string,
  code: string,
  { limitMs = 15_000, never, scopes = [] }: { limitMs?: number; never?: string; scopes?: string[] } = {},
): Promise<number> {
  const start = performance.now();
  for (;;) {
    const answer = await refusal(verifier, token, scopes);
    if (answer === code) return performance.now() - start;
    if (answer === never) throw new Error(`${never} after ${(performance.now() - start).toFixed(0)} ms`);
    if (performance.now() - start > limitMs) throw new Error(`not ${code} after ${limitMs} ms (last: ${answer})`);
    await pause(5); // the pace of the measurement
  }
}

/** The p-th percentile of `values` (nearest rank). */
export const percentile = (values: number[], p: number): number => {
  const sorted = [...values].sort((x, y) => x - y);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
};
