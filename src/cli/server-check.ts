import { request } from 'node:http';

/**
 * When the admin CLI has to assume the server's address (no PUBLIC_BASE_URL: `http://localhost:<PORT>`), it asks the
 * server there whether it would accept what the command printed, so that it warns only when something is wrong
 * (docs/operations.md#admin-cli). Only that loopback address is ever asked, with a short deadline.
 */
export type ServerCheck =
  /** A Gatehouse with this issuer and signing key answers there, and accepted the session token (if any). */
  | { outcome: 'accepted' }
  /** Nothing answers there (connection refused, or no answer before the deadline). */
  | { outcome: 'unreachable' }
  /** Something answers, but not as a Gatehouse that accepts the token would (`detail`: what, and where). */
  | { outcome: 'unexpected'; detail: string }
  | { outcome: 'other-issuer'; issuer: string }
  /** The server there does not publish the CLI's signing key: other local secrets (another DATA_DIR) or keys. */
  | { outcome: 'other-signing-key' }
  /** Same issuer and signing key, but the session token is refused: the member is not in the server's database. */
  | { outcome: 'other-database' };

export interface ServerExpectation {
  /** `http://localhost:<PORT>`, the address the CLI assumed. */
  baseUrl: string;
  issuer: string;
  signingKid: string;
  /** The session token the command printed, tried on GET /v1/organization (any member may read it). */
  sessionToken?: string;
}

export const SERVER_CHECK_TIMEOUT_MS = 2000;

interface Answer {
  status: number;
  body: unknown;
}

/** One GET on a connection of its own (no keep-alive: the CLI exits right after), JSON body or undefined. */
function get(url: string, headers: Record<string, string>, deadline: number): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const timeout = Math.max(1, deadline - Date.now());
    const req = request(url, { method: 'GET', headers: { Accept: 'application/json', ...headers }, agent: false });
    const timer = setTimeout(() => req.destroy(new Error('no answer before the deadline')), timeout);
    req.on('response', (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        // A server that is not Gatehouse may send anything: a few kilobytes are enough to tell.
        if (text.length < 64 * 1024) text += chunk;
      });
      res.on('end', () => {
        clearTimeout(timer);
        let body: unknown;
        try {
          body = JSON.parse(text);
        } catch {
          body = undefined;
        }
        resolve({ status: res.statusCode ?? 0, body });
      });
      res.on('error', (error) => {
        clearTimeout(timer);
        reject(error);
      });
    });
    req.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    req.end();
  });
}

function issuerOf(body: unknown): string | undefined {
  const issuer = (body as { issuer?: unknown } | undefined)?.issuer;
  return typeof issuer === 'string' ? issuer : undefined;
}

function kidsOf(body: unknown): string[] | undefined {
  const keys = (body as { keys?: unknown } | undefined)?.keys;
  if (!Array.isArray(keys)) return undefined;
  return keys.flatMap((key) =>
    typeof (key as { kid?: unknown }).kid === 'string' ? [(key as { kid: string }).kid] : [],
  );
}

/** Asks the server at `expected.baseUrl`; never throws. */
export async function checkServer(
  expected: ServerExpectation,
  timeoutMs = SERVER_CHECK_TIMEOUT_MS,
): Promise<ServerCheck> {
  const deadline = Date.now() + timeoutMs;
  try {
    const metadataPath = '/.well-known/oauth-authorization-server';
    const metadata = await get(`${expected.baseUrl}${metadataPath}`, {}, deadline);
    const issuer = issuerOf(metadata.body);
    if (metadata.status !== 200 || issuer === undefined) {
      return { outcome: 'unexpected', detail: `HTTP ${metadata.status} at ${metadataPath}` };
    }
    if (issuer !== expected.issuer) return { outcome: 'other-issuer', issuer };

    const jwksPath = '/.well-known/jwks.json';
    const jwks = await get(`${expected.baseUrl}${jwksPath}`, {}, deadline);
    const kids = kidsOf(jwks.body);
    if (jwks.status !== 200 || kids === undefined) {
      return { outcome: 'unexpected', detail: `HTTP ${jwks.status} at ${jwksPath}` };
    }
    if (!kids.includes(expected.signingKid)) return { outcome: 'other-signing-key' };

    if (expected.sessionToken === undefined) return { outcome: 'accepted' };
    const tried = await get(
      `${expected.baseUrl}/v1/organization`,
      { Authorization: `Bearer ${expected.sessionToken}` },
      deadline,
    );
    if (tried.status === 200) return { outcome: 'accepted' };
    if (tried.status === 401) return { outcome: 'other-database' };
    return { outcome: 'unexpected', detail: `HTTP ${tried.status} at /v1/organization` };
  } catch {
    // Refused, reset, or no answer in time: nothing usable answers there.
    return { outcome: 'unreachable' };
  }
}
