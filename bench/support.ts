import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Agent, IncomingHttpHeaders, request } from 'node:http';

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

/** What `httpCall` answers: the status, the headers and the whole body as text. */
export interface HttpAnswer {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

/**
 * One request with node:http through `agent`, for many concurrent ones (thousands of long polls: give the agent
 * `maxSockets` above their number). Rejects on a network error, including the agent's `destroy()`.
 */
export function httpCall(
  agent: Agent,
  url: string,
  method: string,
  headers: Record<string, string>,
  body?: string,
): Promise<HttpAnswer> {
  return new Promise((resolve, reject) => {
    const sent = body === undefined ? headers : { ...headers, 'content-length': String(Buffer.byteLength(body)) };
    const req = request(url, { agent, method, headers: sent }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }),
      );
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** This process's soft limit of open files (Linux, from /proc; undefined elsewhere or when unlimited). */
export function openFileLimit(): number | undefined {
  try {
    const line = readFileSync('/proc/self/limits', 'utf8')
      .split('\n')
      .find((l) => l.startsWith('Max open files'));
    const soft = Number(line?.split(/\s{2,}/)[1]);
    return Number.isFinite(soft) ? soft : undefined;
  } catch {
    return undefined;
  }
}
