import { createConnection, Socket } from 'node:net';
import { createServer, Server, TLSSocket } from 'node:tls';
import { listenOnLoopback } from './ports';

/**
 * A TLS-terminating proxy on loopback in front of a plain-HTTP server (Gatehouse's own listener is HTTP; production puts
 * TLS in front of it the same way): connections are decrypted with `cert` and `key` and passed on byte for byte.
 */
export class TlsProxy {
  private server: Server | undefined;
  private readonly sockets = new Set<Socket>();
  port = 0;

  constructor(
    private readonly target: { host: string; port: number },
    private readonly credentials: { cert: string; key: string },
  ) {}

  /** The `https://` origin the proxy answers on. */
  get origin(): string {
    return `https://127.0.0.1:${this.port}`;
  }

  async start(): Promise<void> {
    const server = createServer(this.credentials, (client) => this.accept(client));
    // A client that gives up during the handshake (or does not trust the certificate) is not the proxy's problem.
    server.on('tlsClientError', () => undefined);
    this.port = await listenOnLoopback(server);
    this.server = server;
  }

  async close(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    for (const socket of this.sockets) socket.destroy();
    this.sockets.clear();
    if (server !== undefined) await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  private accept(client: TLSSocket): void {
    const upstream = createConnection(this.target);
    for (const socket of [client, upstream]) {
      this.sockets.add(socket);
      socket.on('error', () => undefined);
      socket.on('close', () => {
        this.sockets.delete(socket);
        client.destroy();
        upstream.destroy();
      });
    }
    client.pipe(upstream);
    upstream.pipe(client);
  }
}
