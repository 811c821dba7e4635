import { readFileSync } from 'node:fs';
import { createServer, Server } from 'node:net';

/**
 * A loopback port nothing listens on right now, for a server that must know its port before it starts (an issuer's
 * URL in its own configuration). Picked below the kernel's ephemeral range (net.ipv4.ip_local_port_range), at random:
 * a port the OS picks for a `listen(0)` or an outgoing connection in the meantime (an identity provider started beside
 * it, another worker's suite) can never be this one. It is free again when this returns.
 */
export async function freePort(): Promise<number> {
  const [low] = ephemeralRange();
  const from = Math.max(1024, low - 12_000);
  for (let attempt = 0; attempt < 50; attempt += 1) {
    const port = from + Math.floor(Math.random() * (low - from));
    if (await bindable(port)) return port;
  }
  throw new Error(`no free loopback port in ${from}-${low - 1}`);
}

function ephemeralRange(): [number, number] {
  try {
    const [low, high] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/).map(Number);
    if (low > 2048 && high >= low) return [low, high];
  } catch {
    // not Linux: the IANA range
  }
  return [49152, 65535];
}

function bindable(port: number): Promise<boolean> {
  const server = createServer();
  return new Promise((resolve) => {
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/** Starts `server` (net, http or tls) on a loopback port the OS picks; resolves to that port. */
export async function listenOnLoopback(server: Server): Promise<number> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  return (server.address() as { port: number }).port;
}
