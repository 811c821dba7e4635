import { existsSync } from 'node:fs';
import { createServer, IncomingMessage, ServerResponse } from 'node:http';
import { join } from 'node:path';
import type * as VerifierHttp from '../../verifier/src/http';
import type * as VerifierLibrary from '../../verifier/src/index';

/**
 * A resource server as a team runs one, in a process of its own (test/support/resource-server-process.ts starts it):
 * node:http, a verifier made from the environment, and one route.
 *
 * - GATEHOUSE_ISSUER, GATEHOUSE_AUDIENCE, GATEHOUSE_CLIENT_ID, GATEHOUSE_CLIENT_SECRET,
 *   GATEHOUSE_MAX_STALENESS_SECONDS: the verifier's options.
 * - GATEHOUSE_VIA (optional, `host:port`): where to connect for the issuer's URLs (a TcpProxy), while the issuer and
 *   every URL Gatehouse publishes stay as they are, as for a resource server behind an egress proxy.
 *
 * `GET /check[?scope=…&scope=…]` with `Authorization: Bearer …` answers as the verifier's Express middleware does:
 * 200 and the VerifiedAccess, or the refusal's status, headers and `{ code, message }`. Once the verifier has started
 * and the server listens, prints one line `listening {"port":…,"startMs":…}`. A failed start prints the error and
 * exits 1. SIGTERM closes the verifier and exits 0; so does the loss of the parent (its IPC channel).
 */

/**
 * The verifier's sources compiled by test/support/global-setup.ts into <buildDir>/verifier/src, beside this file's
 * <buildDir>/test-support; run from the repository (a TypeScript loader), the sources themselves.
 */
function verifierModule<T>(name: string): T {
  const compiled = join(__dirname, '..', 'verifier', 'src', name);
  const path = existsSync(`${compiled}.js`) ? compiled : join(__dirname, '..', '..', 'verifier', 'src', name);
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return require(path) as T;
}

function required(name: string): string {
  const value = process.env[name];
  if (value === undefined || value === '') throw new Error(`${name} is required`);
  return value;
}

/** Connects to `via` for every URL on the issuer's origin (globally: discovery, the feed, introspection, JWKS). */
function routeThrough(issuer: string, via: string): void {
  const origin = new URL(issuer).origin;
  const direct = globalThis.fetch;
  globalThis.fetch = (input: string | URL | Request, init?: RequestInit) => {
    const url = new URL(input instanceof Request ? input.url : input);
    if (url.origin !== origin) return direct(input, init);
    url.host = via;
    return direct(input instanceof Request ? new Request(url, input) : url, init);
  };
}

function answer(response: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  response.writeHead(status, { 'Content-Type': 'application/json', 'Cache-Control': 'no-store', ...headers });
  response.end(JSON.stringify(body));
}

async function main(): Promise<void> {
  const issuer = required('GATEHOUSE_ISSUER');
  const via = process.env.GATEHOUSE_VIA;
  if (via !== undefined && via !== '') routeThrough(issuer, via);
  const { createVerifier } = verifierModule<typeof VerifierLibrary>('index');
  const { check, isRefusal } = verifierModule<typeof VerifierHttp>('http');

  const startedAt = performance.now();
  const verifier = await createVerifier({
    issuer,
    audience: required('GATEHOUSE_AUDIENCE'),
    clientId: required('GATEHOUSE_CLIENT_ID'),
    clientSecret: required('GATEHOUSE_CLIENT_SECRET'),
    maxStalenessSeconds: Number(process.env.GATEHOUSE_MAX_STALENESS_SECONDS ?? 10),
  });
  const startMs = performance.now() - startedAt;

  const handle = async (request: IncomingMessage, response: ServerResponse): Promise<void> => {
    const url = new URL(request.url ?? '/', 'http://resource-server');
    if (request.method !== 'GET' || url.pathname !== '/check') return answer(response, 404, { code: 'not_found' });
    const result = await check(
      verifier,
      request.headers.authorization,
      url.searchParams.getAll('scope'),
      verifier.clientAddress(request),
    );
    if (isRefusal(result)) return answer(response, result.status, result.body, result.headers);
    answer(response, 200, result);
  };
  const server = createServer((request, response) => {
    handle(request, response).catch((error: unknown) =>
      answer(response, 500, { code: 'error', message: error instanceof Error ? error.message : String(error) }),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));

  const stop = (): void => {
    server.close();
    server.closeAllConnections();
    void verifier.close().finally(() => process.exit(0));
  };
  process.once('SIGTERM', stop);
  process.stdout.write(`listening ${JSON.stringify({ port: (server.address() as { port: number }).port, startMs })}\n`);
}

// The parent is gone (its IPC channel closed): so is this resource server, started or not.
process.once('disconnect', () => process.exit(0));

main().catch((error: unknown) => {
  process.stderr.write(`resource server failed to start: ${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
