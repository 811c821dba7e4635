import {
  Agent,
  createServer,
  IncomingHttpHeaders,
  IncomingMessage,
  OutgoingHttpHeaders,
  request as httpRequest,
  Server,
  ServerResponse,
} from 'node:http';
import { listenOnLoopback } from './ports';

/** One request that reached the proxy, as its client sent it, and how it was answered. */
export interface ProxiedRequest {
  method: string;
  /** The request target: path and query. */
  url: string;
  /** The path alone (no query). */
  path: string;
  authorization: string | undefined;
  /** The request body's size, as its Content-Length header gave it (undefined without one). */
  bytes: number | undefined;
  /** performance.now() when the request arrived. */
  at: number;
  /** The status the client was answered; undefined while pending, or when its connection was dropped. */
  status?: number;
}

/** What a rule does with a request. */
export type ProxyAction =
  /** Answered here, never forwarded. */
  | { answer: number; body?: unknown; headers?: Record<string, string> }
  /** The client's connection is destroyed without an answer (a reset, as a failing load balancer does). */
  | { drop: true }
  /** Forwarded; the upstream's answer body (text) is replaced by what `rewrite` returns. */
  | { rewrite: (body: string, status: number) => string };

/** Looks at a request (method and path) and says what to do with it; undefined: the next rule, else forward. */
export type ProxyRule = (request: { method: string; path: string }) => ProxyAction | undefined;

/** Hop-by-hop headers (RFC 9110 section 7.6.1): each side of the proxy has its own connection. */
const HOP_BY_HOP = ['connection', 'keep-alive', 'transfer-encoding', 'proxy-connection', 'upgrade', 'te', 'trailer'];

function endToEnd(headers: IncomingHttpHeaders): OutgoingHttpHeaders {
  const copy: OutgoingHttpHeaders = { ...headers };
  for (const name of HOP_BY_HOP) delete copy[name];
  return copy;
}

/**
 * A small HTTP/1.1 reverse proxy on loopback in front of a listening server (Gatehouse), controlled by the test:
 * it records every request (method, path, Authorization header, answer status), and rules added with `use()` answer
 * a request themselves (503), drop its connection, or rewrite the upstream's answer (doctored discovery documents).
 * Everything else is forwarded as it is, streamed both ways (long polls included); a client that goes away has its
 * upstream request closed too.
 */
export class HttpProxy {
  readonly requests: ProxiedRequest[] = [];
  port = 0;
  private server: Server | undefined;
  private readonly agent = new Agent({ keepAlive: true });
  private readonly rules: ProxyRule[] = [];

  constructor(
    private readonly targetPort: number,
    private readonly targetHost = '127.0.0.1',
  ) {}

  /** `http://127.0.0.1:<port>` */
  get origin(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  async start(): Promise<void> {
    const server = createServer((req, res) => this.handle(req, res));
    this.port = await listenOnLoopback(server);
    this.server = server;
  }

  /** Adds a rule (looked at before those added earlier); returns what removes it. */
  use(rule: ProxyRule): () => void {
    this.rules.unshift(rule);
    return () => {
      const index = this.rules.indexOf(rule);
      if (index >= 0) this.rules.splice(index, 1);
    };
  }

  /** The requests recorded since `mark` (an earlier `requests.length`) that match. */
  since(mark: number, match: (request: ProxiedRequest) => boolean = () => true): ProxiedRequest[] {
    return this.requests.slice(mark).filter(match);
  }

  async close(): Promise<void> {
    this.rules.length = 0;
    const server = this.server;
    this.server = undefined;
    this.agent.destroy();
    if (server === undefined) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    const url = req.url ?? '/';
    const path = url.split('?')[0];
    const method = req.method ?? 'GET';
    const recorded: ProxiedRequest = {
      method,
      url,
      path,
      authorization: req.headers.authorization,
      bytes: req.headers['content-length'] === undefined ? undefined : Number(req.headers['content-length']),
      at: performance.now(),
    };
    this.requests.push(recorded);
    res.on('finish', () => {
      recorded.status = res.statusCode;
    });
    let action: ProxyAction | undefined;
    for (const rule of this.rules) {
      action = rule({ method, path });
      if (action !== undefined) break;
    }
    if (action !== undefined && 'drop' in action) {
      req.socket.destroy();
      return;
    }
    if (action !== undefined && 'answer' in action) {
      req.resume();
      const body = action.body === undefined ? '' : JSON.stringify(action.body);
      res.writeHead(action.answer, {
        'content-type': 'application/json',
        'content-length': Buffer.byteLength(body),
        ...action.headers,
      });
      res.end(body);
      return;
    }
    this.forward(req, res, action?.rewrite);
  }

  private forward(req: IncomingMessage, res: ServerResponse, rewrite?: (body: string, status: number) => string): void {
    const upstream = httpRequest({
      host: this.targetHost,
      port: this.targetPort,
      method: req.method,
      path: req.url,
      headers: endToEnd(req.headers),
      agent: this.agent,
    });
    upstream.on('error', () => res.destroy());
    // The client went away before its answer (a verifier closed, a timed-out poll): so does the upstream request.
    res.on('close', () => {
      if (!res.writableFinished) upstream.destroy();
    });
    upstream.on('response', (answer) => {
      const status = answer.statusCode ?? 502;
      const headers = endToEnd(answer.headers);
      if (rewrite === undefined) {
        res.writeHead(status, headers);
        answer.pipe(res);
        return;
      }
      const chunks: Buffer[] = [];
      answer.on('data', (chunk: Buffer) => chunks.push(chunk));
      answer.on('error', () => res.destroy());
      answer.on('end', () => {
        const body = rewrite(Buffer.concat(chunks).toString('utf8'), status);
        delete headers['content-length'];
        res.writeHead(status, { ...headers, 'content-length': Buffer.byteLength(body) });
        res.end(body);
      });
    });
    req.pipe(upstream);
  }
}
