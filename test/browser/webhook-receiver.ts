import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { listenOnLoopback } from '../support/ports';

/** What the receiver answers a delivery: a status, and a JSON body (none: empty). */
export interface ReceiverAnswer {
  status: number;
  body?: string;
}

export interface ReceivedDelivery {
  headers: IncomingHttpHeaders;
  body: string;
}

/**
 * A webhook endpoint on loopback (which the server accepts outside production): it keeps every request it got, in
 * order, and answers each as `answer` says at that moment.
 */
export class WebhookReceiver {
  private constructor(
    private readonly server: Server,
    readonly url: string,
    readonly received: ReceivedDelivery[],
  ) {}

  static async start(answer: () => ReceiverAnswer, path = '/hooks'): Promise<WebhookReceiver> {
    const received: ReceivedDelivery[] = [];
    const server = createServer((request, response) => {
      let body = '';
      request.on('data', (chunk: Buffer) => (body += chunk.toString()));
      request.on('end', () => {
        received.push({ headers: request.headers, body });
        const { status, body: text = '' } = answer();
        response.writeHead(status, { 'content-type': 'application/json', 'x-request-id': 'rcv-1' });
        response.end(text);
      });
    });
    return new WebhookReceiver(server, `http://127.0.0.1:${await listenOnLoopback(server)}${path}`, received);
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}
