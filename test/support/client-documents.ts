import { createHash, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer, Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { LocalCa } from './local-ca';

/** What one document path answers: its body, Cache-Control, and how long it waits first. */
export interface DocumentAnswer {
  body: string;
  cacheControl?: string;
  delayMs?: number;
}

/**
 * Client ID Metadata Documents served over https with the test run's local CA (docs/mcp.md#clients): the client_id of
 * each is `https://localhost:<port><path>`. Gatehouse trusts the CA through CLIENT_DOCUMENT_CA.
 */
export class ClientDocumentServer {
  private constructor(
    private readonly ca: LocalCa,
    private readonly server: Server,
    readonly origin: string,
    readonly answers: Map<string, DocumentAnswer>,
    /** Requests per path. */
    readonly hits: Map<string, number>,
  ) {}

  static async start(): Promise<ClientDocumentServer> {
    const ca = LocalCa.create();
    const answers = new Map<string, DocumentAnswer>();
    const hits = new Map<string, number>();
    const server = createServer({ cert: ca.cert, key: ca.key }, (request, response) => {
      const path = request.url ?? '/';
      hits.set(path, (hits.get(path) ?? 0) + 1);
      const answer = answers.get(path);
      if (answer === undefined) {
        response.writeHead(404).end();
        return;
      }
      const send = () => {
        if (response.destroyed) return;
        const headers: Record<string, string> = { 'content-type': 'application/json' };
        if (answer.cacheControl !== undefined) headers['cache-control'] = answer.cacheControl;
        response.writeHead(200, headers).end(answer.body);
      };
      if (answer.delayMs === undefined) send();
      else setTimeout(send, answer.delayMs).unref();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    return new ClientDocumentServer(ca, server, `https://localhost:${port}`, answers, hits);
  }

  /** The CA certificate's file, for NODE_EXTRA_CA_CERTS of a server in a process of its own. */
  get caFile(): string {
    return this.ca.caFile;
  }

  get caPem(): string {
    return readFileSync(this.ca.caFile, 'utf8');
  }

  /** Serves a client's document at `path` and returns its client_id. */
  client(path: string, fields: Record<string, unknown> = {}, answer: Omit<DocumentAnswer, 'body'> = {}): string {
    const clientId = `${this.origin}${path}`;
    const document = { client_id: clientId, client_name: 'Test MCP client', redirect_uris: [REDIRECT_URI], ...fields };
    this.answers.set(path, { body: JSON.stringify(document), ...answer });
    return clientId;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
    this.ca.remove();
  }
}

/** A loopback redirect URI as native clients use (RFC 8252): its port may differ at the authorization request. */
export const REDIRECT_URI = 'http://127.0.0.1:33418/callback';

/** A PKCE pair (RFC 7636, S256). */
export function pkce(): { verifier: string; challenge: string } {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
}
