import { generateKeyPairSync, randomBytes } from 'node:crypto';

/** What the benchmarks share: a free port for the server under measurement, and waiting for it to answer. */
export { freePort } from '../test/support/ports';

/**
 * What NODE_ENV=production requires of a benchmarked server: fresh secrets, and an https:// issuer (nothing fetches it).
 */
export function productionSettings(): Record<string, string> {
  return {
    JWT_ISSUER: 'https://gatehouse.bench.example',
    API_KEY_PEPPER: randomBytes(32).toString('base64'),
    JWT_PRIVATE_KEY: generateKeyPairSync('ec', { namedCurve: 'P-256' })
      .privateKey.export({ type: 'pkcs8', format: 'pem' })
      .toString(),
    INTEGRATIONS_ENCRYPTION_KEY: randomBytes(32).toString('base64'),
  };
}

/** Resolves once `url` answers below 500; throws after `timeoutMs`. */
export async function waitFor(url: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    try {
      if ((await fetch(url)).status < 500) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`server did not answer ${url} within ${timeoutMs} ms`);
}
