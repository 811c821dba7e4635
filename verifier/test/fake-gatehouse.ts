import { once } from 'node:events';
import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import { exportJWK, generateKeyPair, KeyObject, SignJWT } from 'jose';

export const AUDIENCE = 'https://orders.example.com';
export const CREDENTIAL_CHANGE = 'https://schemas.openid.net/secevent/caep/event-type/credential-change';
export const TOKEN_CLAIMS_CHANGE = 'https://schemas.openid.net/secevent/caep/event-type/token-claims-change';
export const CLIENT_ID = 'rs';
export const CLIENT_SECRET = 'secret-do-not-print';

type Key = { privateKey: KeyObject; publicKey: KeyObject };

interface Stream {
  id: string;
  pending: Map<string, string>;
}

export interface PollSeen {
  stream: string;
  at: number;
  bytes: number;
  returnImmediately: boolean;
  ack: string[];
  setErrs: Record<string, { err: string; description: string }>;
}

/**
 * A fake Gatehouse: metadata, SSF configuration, JWKS, instance streams (POST/DELETE /ssf/stream, POST
 * /ssf/poll/:id) that the test fills, and introspection. Every knob a test turns is a public field.
 */
export class FakeGatehouse {
  server!: Server;
  issuer = '';
  key!: Key;
  /** Where the stream's `Date` puts S, relative to now (ms): in the past, tokens issued now need no introspection. */
  dateOffsetMs = -60_000;
  streams = new Map<string, Stream>();
  streamsCreated: Array<{ description: unknown; method: unknown }> = [];
  streamsDeleted: string[] = [];
  acked: string[] = [];
  setErrs: Record<string, { err: string; description: string }> = {};
  polls: PollSeen[] = [];
  /** The whole /ssf/poll answer is 503, and every other route too. */
  down = false;
  jwksDown = false;
  /** Long polls wait this long for an event (SSF_POLL_WAIT_SECONDS). */
  waitMs = 2000;
  /** SETs per answer at most (the poll's maxEvents applies too, unless ignoreMaxEvents). */
  pageSize = Infinity;
  ignoreMaxEvents = false;
  pollDelayMs = 0;
  /** Answer long polls 429 with this Retry-After. */
  tooManyPolls: string | undefined;
  /** Answers to GET/POST by path, replacing the normal ones (status, body and headers). */
  override: Record<string, { status?: number; body?: unknown; headers?: Record<string, string> }> = {};
  /** The audience of the streams it creates (the resource server its credentials belong to). */
  audience = AUDIENCE;
  /** The metadata's scopes_supported (Gatehouse's permissions); absent unless set. */
  scopesSupported: string[] | undefined;
  introspections: string[] = [];
  introspectionDelayMs = 0;
  introspection: (token: string) => { status: number; body: unknown } = () => ({
    status: 200,
    body: { active: true, sub: 'user-1', org: 'org-1', client_id: 'key-1', scope: 'orders:read' },
  });
  requests: Array<{ method: string; url: string; authorization: string | undefined }> = [];
  private waiting: Array<() => void> = [];
  private nextStream = 1;

  async start(): Promise<this> {
    this.key = await generateKeyPair('ES256', { extractable: true });
    this.server = createServer((req, res) => void this.handle(req, res));
    this.server.listen(0, '127.0.0.1');
    await once(this.server, 'listening');
    this.issuer = `http://127.0.0.1:${(this.server.address() as { port: number }).port}`;
    return this;
  }

  stop(): void {
    for (const wake of this.waiting.splice(0)) wake();
    this.server.closeAllConnections();
    this.server.close();
  }

  /** Wakes the waiting long polls (after publishing with `quiet`). */
  wake(): void {
    for (const wake of this.waiting.splice(0)) wake();
  }

  async token(
    claims: Record<string, unknown> = {},
    options: { typ?: string; audience?: string } = {},
  ): Promise<string> {
    const now = Math.floor(Date.now() / 1000);
    return new SignJWT({
      org: 'org-1',
      client_id: 'key-1',
      akid: 'key-1',
      token_use: 'access',
      scope: 'orders:read orders:write',
      iat: now,
      ...claims,
    })
      .setProtectedHeader({ alg: 'ES256', kid: 'k1', typ: options.typ ?? 'at+jwt' })
      .setIssuer(this.issuer)
      .setAudience(options.audience ?? this.audience)
      .setSubject(typeof claims.sub === 'string' ? claims.sub : 'user-1')
      .setExpirationTime(now + 600)
      .setJti(`jti-${Math.random()}`)
      .sign(this.key.privateKey);
  }

  /** A SET to every stream (as Gatehouse fans an event out). */
  async publish(
    jti: string,
    subId: object,
    events: object,
    options: { key?: Key; audience?: string; quiet?: boolean } = {},
  ): Promise<void> {
    const set = await new SignJWT({ sub_id: subId, events })
      .setProtectedHeader({ alg: 'ES256', kid: 'k1', typ: 'secevent+jwt' })
      .setIssuer(this.issuer)
      .setAudience(options.audience ?? this.audience)
      .setIssuedAt()
      .setJti(jti)
      .sign((options.key ?? this.key).privateKey);
    for (const stream of this.streams.values()) stream.pending.set(jti, set);
    if (!options.quiet) this.wake();
  }

  revoke(jti: string, keyId: string, options: { quiet?: boolean } = {}): Promise<void> {
    return this.publish(
      jti,
      { format: 'opaque', id: keyId },
      { [CREDENTIAL_CHANGE]: { change_type: 'revoke', credential_type: 'api_key' } },
      options,
    );
  }

  /** Gatehouse deleted every stream (idle): their next poll is 404. */
  dropStreams(): void {
    this.streams.clear();
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    let raw = '';
    for await (const chunk of req) raw += chunk;
    const url = new URL(req.url ?? '/', this.issuer);
    this.requests.push({ method: req.method ?? '', url: url.href, authorization: req.headers.authorization });
    const send = (status: number, body?: unknown, headers: Record<string, string> = {}): void => {
      if (body === undefined) res.writeHead(status, headers).end();
      else res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(body));
    };
    if (this.down) return send(503);
    const override = this.override[url.pathname];
    if (override !== undefined) return send(override.status ?? 200, override.body, override.headers);
    const authenticated =
      req.headers.authorization === `Basic ${Buffer.from(`${CLIENT_ID}:${CLIENT_SECRET}`).toString('base64')}`;
    if (url.pathname === '/.well-known/oauth-authorization-server') {
      return send(200, {
        issuer: this.issuer,
        jwks_uri: `${this.issuer}/jwks`,
        introspection_endpoint: `${this.issuer}/introspect`,
        ...(this.scopesSupported === undefined ? {} : { scopes_supported: this.scopesSupported }),
      });
    }
    if (url.pathname === '/.well-known/ssf-configuration') {
      return send(200, {
        issuer: this.issuer,
        jwks_uri: `${this.issuer}/jwks`,
        configuration_endpoint: `${this.issuer}/ssf/stream`,
      });
    }
    if (url.pathname === '/jwks') {
      if (this.jwksDown) return send(503);
      return send(200, { keys: [{ ...(await exportJWK(this.key.publicKey)), kid: 'k1', alg: 'ES256' }] });
    }
    if (!authenticated)
      return send(401, { code: 'UNAUTHENTICATED' }, { 'www-authenticate': 'Basic realm="gatehouse"' });
    if (url.pathname === '/ssf/stream' && req.method === 'POST') {
      const body = JSON.parse(raw) as { delivery?: { method?: unknown }; description?: unknown };
      this.streamsCreated.push({ description: body.description, method: body.delivery?.method });
      const id = `stream-${this.nextStream++}`;
      this.streams.set(id, { id, pending: new Map() });
      const date = new Date(Date.now() + this.dateOffsetMs).toUTCString();
      return send(
        201,
        {
          stream_id: id,
          iss: this.issuer,
          aud: this.audience,
          delivery: { endpoint_url: `${this.issuer}/ssf/poll/${id}` },
        },
        { date },
      );
    }
    if (url.pathname === '/ssf/stream' && req.method === 'DELETE') {
      const id = url.searchParams.get('stream_id') ?? '';
      this.streamsDeleted.push(id);
      this.streams.delete(id);
      return send(204);
    }
    if (url.pathname === '/introspect') {
      const token = new URLSearchParams(raw).get('token') ?? '';
      this.introspections.push(token);
      if (this.introspectionDelayMs > 0) await new Promise((r) => setTimeout(r, this.introspectionDelayMs));
      const answer = this.introspection(token);
      return send(answer.status, answer.body);
    }
    if (url.pathname.startsWith('/ssf/poll/')) return this.poll(url.pathname.slice('/ssf/poll/'.length), raw, send);
    return send(404);
  }

  private async poll(
    id: string,
    raw: string,
    send: (status: number, body?: unknown, headers?: Record<string, string>) => void,
  ): Promise<void> {
    const body = JSON.parse(raw) as {
      maxEvents: number;
      returnImmediately: boolean;
      ack: string[];
      setErrs: Record<string, { err: string; description: string }>;
    };
    this.polls.push({ stream: id, at: Date.now(), bytes: Buffer.byteLength(raw), ...body });
    const stream = this.streams.get(id);
    if (stream === undefined) return send(404, { code: 'NOT_FOUND', message: 'stream not found' });
    if (Buffer.byteLength(raw) > 64 * 1024) return send(413);
    if (this.tooManyPolls !== undefined && !body.returnImmediately) {
      return send(429, { code: 'RESOURCE_EXHAUSTED' }, { 'retry-after': this.tooManyPolls });
    }
    for (const jti of body.ack) {
      if (stream.pending.delete(jti)) this.acked.push(jti);
    }
    for (const [jti, error] of Object.entries(body.setErrs)) {
      stream.pending.delete(jti);
      this.setErrs[jti] = error;
    }
    if (this.pollDelayMs > 0) await new Promise((r) => setTimeout(r, this.pollDelayMs));
    if (stream.pending.size === 0 && !body.returnImmediately && this.waitMs > 0) {
      await Promise.race([
        new Promise<void>((r) => this.waiting.push(r)),
        new Promise((r) => setTimeout(r, this.waitMs)),
      ]);
    }
    const limit = Math.min(this.pageSize, this.ignoreMaxEvents ? Infinity : body.maxEvents);
    const page = [...stream.pending].slice(0, limit);
    send(200, { sets: Object.fromEntries(page), moreAvailable: stream.pending.size > page.length });
  }
}

export const until = async (condition: () => Promise<boolean> | boolean, ms = 3000): Promise<number> => {
  const start = Date.now();
  while (!(await condition())) {
    if (Date.now() - start > ms) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 10));
  }
  return Date.now() - start;
};

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
