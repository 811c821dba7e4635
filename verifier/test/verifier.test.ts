import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { exportJWK, generateKeyPair, KeyObject, SignJWT } from 'jose';
import { createVerifier, Verifier, VerifyError } from '../src/index';
import { gatehouse } from '../src/express';
import { GatehouseGuard, GatehouseRefusal } from '../src/nest';

const AUDIENCE = 'https://orders.example.com';
const CREDENTIAL_CHANGE = 'https://schemas.openid.net/secevent/caep/event-type/credential-change';
const TOKEN_CLAIMS_CHANGE = 'https://schemas.openid.net/secevent/caep/event-type/token-claims-change';

/** A fake Gatehouse: metadata, SSF configuration, JWKS, a poll feed the test fills, introspection. */
class FakeGatehouse {
  server!: Server;
  issuer = '';
  key!: { privateKey: KeyObject; publicKey: KeyObject };
  pending = new Map<string, string>();
  acked: string[] = [];
  down = false;
  introspections = 0;
  private waiting: Array<() => void> = [];

  async start(): Promise<void> {
    this.key = await generateKeyPair('ES256', { extractable: true });
    this.server = createServer((req, res) => void this.handle(req, res));
    this.server.listen(0, '127.0.0.1');
    await once(this.server, 'listening');
    this.issuer = `http://127.0.0.1:${(this.server.address() as { port: number }).port}`;
  }

  async token(claims: Record<string, unknown> = {}, typ = 'at+jwt'): Promise<string> {
    const now = Math.floor(Date.now() / 1000);
    return new SignJWT({
      org: 'org-1',
      client_id: 'key-1',
      akid: 'key-1',
      token_use: 'access',
      scope: 'orders:read orders:write',
      ...claims,
    })
      .setProtectedHeader({ alg: 'ES256', kid: 'k1', typ })
      .setIssuer(this.issuer)
      .setAudience(AUDIENCE)
      .setSubject(typeof claims.sub === 'string' ? claims.sub : 'user-1')
      .setIssuedAt(now)
      .setExpirationTime(now + 600)
      .setJti(`jti-${Math.random()}`)
      .sign(this.key.privateKey);
  }

  async publish(jti: string, subId: object, events: object): Promise<void> {
    const set = await new SignJWT({ sub_id: subId, events })
      .setProtectedHeader({ alg: 'ES256', kid: 'k1', typ: 'secevent+jwt' })
      .setIssuer(this.issuer)
      .setAudience(AUDIENCE)
      .setIssuedAt()
      .setJti(jti)
      .sign(this.key.privateKey);
    this.pending.set(jti, set);
    for (const wake of this.waiting.splice(0)) wake();
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    let raw = '';
    for await (const chunk of req) raw += chunk;
    if (this.down) {
      res.writeHead(503).end();
      return;
    }
    const json = (body: unknown): void =>
      void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    switch (req.url ?? '') {
      case '/.well-known/oauth-authorization-server':
        json({
          issuer: this.issuer,
          jwks_uri: `${this.issuer}/jwks`,
          introspection_endpoint: `${this.issuer}/introspect`,
        });
        return;
      case '/.well-known/ssf-configuration':
        json({ configuration_endpoint: `${this.issuer}/ssf/stream` });
        return;
      case '/ssf/stream':
        json({ delivery: { endpoint_url: `${this.issuer}/ssf/poll` } });
        return;
      case '/jwks':
        json({ keys: [{ ...(await exportJWK(this.key.publicKey)), kid: 'k1', alg: 'ES256' }] });
        return;
      case '/introspect':
        this.introspections += 1;
        json({ active: true, sub: 'user-1', org: 'org-1', client_id: 'key-1', scope: 'orders:read' });
        return;
      case '/ssf/poll': {
        const body = JSON.parse(raw) as { ack: string[]; returnImmediately: boolean };
        for (const jti of body.ack) {
          this.pending.delete(jti);
          this.acked.push(jti);
        }
        if (this.pending.size === 0 && !body.returnImmediately) {
          await Promise.race([new Promise<void>((r) => this.waiting.push(r)), new Promise((r) => setTimeout(r, 2000))]);
        }
        json({ sets: Object.fromEntries(this.pending), moreAvailable: false });
        return;
      }
      default:
        res.writeHead(404).end();
    }
  }
}

const until = async (condition: () => Promise<boolean> | boolean, ms = 3000): Promise<number> => {
  const start = Date.now();
  while (!(await condition())) {
    if (Date.now() - start > ms) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 10));
  }
  return Date.now() - start;
};

const refusedWith = async (promise: Promise<unknown>): Promise<string> => {
  try {
    await promise;
    return 'accepted';
  } catch (error) {
    return error instanceof VerifyError ? error.code : String(error);
  }
};

void describe('@gatehouse/verifier', () => {
  const gh = new FakeGatehouse();
  let verifier: Verifier;

  before(async () => {
    await gh.start();
    verifier = await createVerifier({
      issuer: gh.issuer,
      audience: AUDIENCE,
      clientId: 'rs',
      clientSecret: 'secret',
      maxStalenessSeconds: 1,
    });
  });
  after(async () => {
    await verifier.close();
    gh.server.closeAllConnections();
    gh.server.close();
  });

  void it('verifies an access token: who it is and its scopes; refuses what is not one, and a missing scope', async () => {
    const token = await gh.token();
    assert.deepEqual(await verifier.verify(token, { scopes: ['orders:read'] }), {
      userId: 'user-1',
      organizationId: 'org-1',
      apiKeyId: 'key-1',
      scopes: ['orders:read', 'orders:write'],
    });
    assert.equal(await refusedWith(verifier.verify(await gh.token({}, 'JWT'))), 'invalid_token');
    assert.equal(await refusedWith(verifier.verify(`${token}x`)), 'invalid_token');
    assert.equal(await refusedWith(verifier.verify(await gh.token({ token_use: 'session' }))), 'invalid_token');
    assert.equal(await refusedWith(verifier.verify(token, { scopes: ['orders:admin'] })), 'insufficient_scope');
  });

  void it('refuses a revoked key as soon as its SET arrives, and acknowledges it', async () => {
    const token = await gh.token({ client_id: 'key-2' });
    await verifier.verify(token);
    await gh.publish(
      'set-1',
      { format: 'opaque', id: 'key-2' },
      { [CREDENTIAL_CHANGE]: { change_type: 'revoke', credential_type: 'api_key' } },
    );
    const ms = await until(async () => (await refusedWith(verifier.verify(token))) === 'revoked');
    assert.ok(ms < 1000, `refused after ${ms} ms`);
    await until(() => gh.acked.includes('set-1'));
  });

  void it('narrows the scopes of a member whose role changed', async () => {
    const token = await gh.token({ sub: 'user-3' });
    await gh.publish(
      'set-2',
      { format: 'iss_sub', iss: gh.issuer, sub: 'user-3' },
      {
        [TOKEN_CLAIMS_CHANGE]: { claims: { org: 'org-1', scope: 'orders:read' } },
      },
    );
    await until(async () => (await verifier.verify(token)).scopes.length === 1);
    assert.equal(await refusedWith(verifier.verify(token, { scopes: ['orders:write'] })), 'insufficient_scope');
  });

  void it('fails closed with feed_stale when the feed stops answering, and recovers by itself', async () => {
    const token = await gh.token();
    gh.down = true;
    await until(async () => (await refusedWith(verifier.verify(token))) === 'feed_stale', 8000);
    gh.down = false;
    await until(async () => (await refusedWith(verifier.verify(token))) === 'accepted', 8000);
  });

  void it('falls back to introspection per token when asked to', async () => {
    const fallback = await createVerifier({
      issuer: gh.issuer,
      audience: AUDIENCE,
      clientId: 'rs',
      clientSecret: 'secret',
      maxStalenessSeconds: 1,
      fallbackToIntrospection: true,
    });
    try {
      gh.down = true;
      await until(() => !fallback.fresh, 8000);
      gh.down = false;
      const before = gh.introspections;
      const access = await fallback.verify(await gh.token());
      assert.deepEqual(access.scopes, ['orders:read']);
      assert.equal(gh.introspections, before + 1);
    } finally {
      gh.down = false;
      await fallback.close();
    }
  });

  void it('an Express middleware and a Nest guard answer 401, 403 or let the request on', async () => {
    await until(() => verifier.fresh, 8000);
    const token = await gh.token();
    const run = async (authorization: string | undefined, scopes: string[]) => {
      const req: Parameters<ReturnType<typeof gatehouse>>[0] = { headers: { authorization } };
      const res = {
        code: 0,
        headers: {} as Record<string, string>,
        status(c: number) {
          this.code = c;
          return this;
        },
        set(h: Record<string, string>) {
          Object.assign(this.headers, h);
          return this;
        },
        json() {
          return this;
        },
      };
      let passed = false;
      await new Promise<void>((resolve) => {
        gatehouse(verifier, scopes)(req, res, () => {
          passed = true;
          resolve();
        });
        setTimeout(resolve, 200);
      });
      return { passed, code: res.code, challenge: res.headers['WWW-Authenticate'] };
    };
    assert.deepEqual(await run(`Bearer ${token}`, ['orders:read']), { passed: true, code: 0, challenge: undefined });
    assert.equal((await run(undefined, [])).code, 401);
    assert.equal((await run(`Bearer ${token}`, ['orders:admin'])).code, 403);

    const headers: Record<string, string> = {};
    const context = (authorization?: string) => ({
      switchToHttp: () => ({
        getRequest: () => ({ headers: { authorization } }),
        getResponse: () => ({ setHeader: (n: string, v: string) => (headers[n] = v) }),
      }),
    });
    assert.equal(await new GatehouseGuard(verifier, ['orders:read']).canActivate(context(`Bearer ${token}`)), true);
    await assert.rejects(
      new GatehouseGuard(verifier).canActivate(context('Bearer nope')),
      (e: GatehouseRefusal) => e.statusCode === 401,
    );
    assert.equal(headers['WWW-Authenticate'], 'Bearer realm="gatehouse", error="invalid_token"');
  });
});
