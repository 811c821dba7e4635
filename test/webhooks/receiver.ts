import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { listenOnLoopback } from '../support/ports';
import { waitFor } from '../support/wait';

/**
 * What a receiver answers one request: a status (with `ok` as its body), a status with a body and headers of its own,
 * or nothing at all (it hangs until closed).
 */
export type Answer = number | 'hang' | { status: number; body: string | Buffer; headers?: Record<string, string> };

/** A request as the receiver got it, verified with the Standard Webhooks library when its secret is known. */
export interface Received {
  id: string;
  timestamp: string;
  body: string;
  /** `{ type, timestamp, data }`, as `Webhook.verify` returned it. */
  payload: { type: string; timestamp: string; data: Record<string, unknown> };
  headers: IncomingMessage['headers'];
}

/** A webhook endpoint on loopback that checks every signature independently of Gatehouse's signer. */
export class Receiver {
  readonly received: Received[] = [];
  /** Requests whose signature did not verify (answered 400): a test expects none. */
  readonly refused: string[] = [];
  /** Requests answered so far, verified or not. */
  requests = 0;
  /** Every request as it came, verified or not: to verify with another secret than `secret`. */
  readonly raw: Array<{ headers: Record<string, string>; body: string }> = [];
  secret: string | undefined;
  /** How long each answer waits (a slow endpoint). */
  delayMs = 0;
  private readonly answers: Answer[] = [];
  private fallback: Answer = 204;
  private readonly sockets = new Set<Socket>();

  private constructor(
    private readonly server: Server,
    readonly url: string,
  ) {}

  static async start(): Promise<Receiver> {
    const server = createServer();
    const port = await listenOnLoopback(server);
    const receiver = new Receiver(server, `http://127.0.0.1:${port}/hooks/gatehouse`);
    server.on('request', (request: IncomingMessage, response: ServerResponse) => receiver.handle(request, response));
    server.on('connection', (socket: Socket) => {
      receiver.sockets.add(socket);
      socket.on('close', () => receiver.sockets.delete(socket));
    });
    return receiver;
  }

  /** The next requests' answers, in order; then `otherwise` (204 by default). */
  answer(answers: Answer[], otherwise: Answer = 204): void {
    this.answers.splice(0, this.answers.length, ...answers);
    this.fallback = otherwise;
  }

  /** Resolves once `count` verified requests arrived (or fails after `timeoutMs`). */
  async waitFor(count: number, timeoutMs = 10_000): Promise<Received[]> {
    try {
      await waitFor(`${count} verified webhooks`, () => this.received.length >= count, { timeoutMs });
    } catch (error) {
      throw new Error(`${(error as Error).message}: ${this.received.length} arrived`, { cause: error });
    }
    return this.received.slice(0, count);
  }

  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private handle(request: IncomingMessage, response: ServerResponse): void {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      this.requests += 1;
      const body = Buffer.concat(chunks).toString('utf8');
      this.raw.push({ headers: request.headers as Record<string, string>, body });
      const answer = this.answers.shift() ?? this.fallback;
      if (this.secret !== undefined) {
        try {
          const payload = new Webhook(this.secret).verify(body, request.headers as Record<string, string>);
          this.received.push({
            id: String(request.headers['webhook-id']),
            timestamp: String(request.headers['webhook-timestamp']),
            body,
            payload: payload as Received['payload'],
            headers: request.headers,
          });
        } catch (error) {
          this.refused.push(String(error));
          response.writeHead(400).end();
          return;
        }
      }
      if (answer === 'hang') return;
      const send = (): void =>
        typeof answer === 'number'
          ? void response.writeHead(answer, { 'content-type': 'text/plain' }).end('ok')
          : void response.writeHead(answer.status, answer.headers ?? {}).end(answer.body);
      if (this.delayMs > 0) setTimeout(send, this.delayMs);
      else send();
    });
  }
}
