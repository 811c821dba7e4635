import { createConnection, createServer, Server, Socket } from 'node:net';
import { createTestApp, createTestDatabase, POSTGRES_URL, TestApp, TestDatabase } from './test-app';

export type ProxyMode = 'forward' | 'refuse' | 'blackhole';

/**
 * A TCP proxy on loopback between the app and a real server (PostgreSQL), to simulate outages:
 * - `refuse()`: every open connection is reset and the port stops listening (database down);
 * - `blackhole()`: nothing passes any more on open connections, and new ones are accepted but
 *   never answered (network partition, stalled database);
 * - `restore()`: new connections are forwarded again. Connections black-holed before stay silent
 *   until `close()`, like peers whose packets are lost: the app must not count on them coming back.
 */
export class TcpProxy {
  private server: Server | undefined;
  private readonly pairs = new Set<{ client: Socket; upstream: Socket | undefined; silenced: boolean }>();
  private currentMode: ProxyMode = 'forward';
  port = 0;

  constructor(
    private readonly targetHost: string,
    private readonly targetPort: number,
  ) {}

  get mode(): ProxyMode {
    return this.currentMode;
  }

  async start(port = 0): Promise<void> {
    const server = createServer((client) => this.accept(client));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => {
        server.off('error', reject);
        resolve();
      });
    });
    this.server = server;
    this.port = (server.address() as { port: number }).port;
  }

  async refuse(): Promise<void> {
    this.currentMode = 'refuse';
    for (const pair of this.pairs) {
      pair.client.resetAndDestroy();
      pair.upstream?.destroy();
    }
    this.pairs.clear();
    await this.stopListening();
  }

  blackhole(): void {
    this.currentMode = 'blackhole';
    for (const pair of this.pairs) this.silence(pair);
  }

  /** Forwards new connections again (listening on the same port after `refuse()`). */
  async restore(): Promise<void> {
    this.currentMode = 'forward';
    if (this.server === undefined) await this.start(this.port);
  }

  async close(): Promise<void> {
    for (const pair of this.pairs) {
      pair.client.destroy();
      pair.upstream?.destroy();
    }
    this.pairs.clear();
    await this.stopListening();
  }

  private accept(client: Socket): void {
    const pair = { client, upstream: undefined as Socket | undefined, silenced: false };
    this.pairs.add(pair);
    client.on('error', () => undefined);
    client.on('close', () => {
      this.pairs.delete(pair);
      pair.upstream?.destroy();
    });
    if (this.currentMode === 'blackhole') {
      this.silence(pair);
      return;
    }
    const upstream = createConnection({ host: this.targetHost, port: this.targetPort });
    pair.upstream = upstream;
    upstream.on('error', () => client.destroy());
    upstream.on('close', () => {
      if (!pair.silenced) client.destroy();
    });
    client.pipe(upstream);
    upstream.pipe(client);
  }

  /** Data is read and dropped in both directions; neither side is told anything. */
  private silence(pair: { client: Socket; upstream: Socket | undefined; silenced: boolean }): void {
    if (pair.silenced) return;
    pair.silenced = true;
    pair.client.unpipe();
    pair.upstream?.unpipe();
    pair.client.removeAllListeners('data');
    pair.upstream?.removeAllListeners('data');
    pair.client.on('data', () => undefined);
    pair.upstream?.on('data', () => undefined);
  }

  private async stopListening(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    if (server === undefined) return;
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}

/** A test app on a database of its own whose PostgreSQL connections go through a {@link TcpProxy}. */
export interface AppBehindProxy {
  proxy: TcpProxy;
  database: TestDatabase;
  t: TestApp;
}

/** Starts a {@link TcpProxy} to POSTGRES_URL and a test app connected through it. */
export async function startAppBehindProxy(): Promise<AppBehindProxy> {
  const target = new URL(POSTGRES_URL!);
  const proxy = new TcpProxy(target.hostname, Number(target.port || 5432));
  await proxy.start();
  const viaProxy = new URL(POSTGRES_URL!);
  viaProxy.hostname = '127.0.0.1';
  viaProxy.port = String(proxy.port);
  const database = createTestDatabase();
  // Production's connect time-out: the outage tests wait it out.
  const env = { DATABASE_URL: viaProxy.toString(), DATABASE_CONNECT_TIMEOUT_MS: '1000' };
  const t = await createTestApp({ database, env });
  return { proxy, database, t };
}

/** Closes what {@link startAppBehindProxy} started (any part of it that was started). */
export async function closeAppBehindProxy(started: Partial<AppBehindProxy>): Promise<void> {
  await started.t?.close();
  await started.proxy?.close();
  await started.database?.drop();
}
