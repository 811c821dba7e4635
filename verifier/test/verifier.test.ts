import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { errors as joseErrors, generateKeyPair } from 'jose';
import { invalidSetError } from '../src/feed';
import { createVerifier, Verifier, VerifierOptions, VerifierSetupError, VerifyError } from '../src/index';
import { gatehouse } from '../src/express';
import { check } from '../src/http';
import { GatehouseGuard, GatehouseRefusal } from '../src/nest';
import {
  AUDIENCE,
  CLIENT_ID,
  CLIENT_SECRET,
  CREDENTIAL_CHANGE,
  FakeGatehouse,
  sleep,
  TOKEN_CLAIMS_CHANGE,
  until,
} from './fake-gatehouse';

const refusedWith = async (promise: Promise<unknown>): Promise<string> => {
  try {
    await promise;
    return 'accepted';
  } catch (error) {
    return error instanceof VerifyError ? error.code : String(error);
  }
};

const messageOf = async (promise: Promise<unknown>): Promise<string> => {
  try {
    await promise;
    return 'accepted';
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  }
};

const options = (gh: FakeGatehouse, more: Partial<VerifierOptions> = {}): VerifierOptions => ({
  issuer: gh.issuer,
  audience: AUDIENCE,
  clientId: CLIENT_ID,
  clientSecret: CLIENT_SECRET,
  maxStalenessSeconds: 1,
  ...more,
});

/** Runs `test` with a fresh fake Gatehouse and a verifier on it, both closed after. */
async function withVerifier(
  test: (gh: FakeGatehouse, verifier: Verifier) => Promise<void>,
  setup: (gh: FakeGatehouse) => void = () => undefined,
  more: Partial<VerifierOptions> = {},
): Promise<void> {
  const gh = await new FakeGatehouse().start();
  setup(gh);
  let verifier: Verifier | undefined;
  try {
    verifier = await createVerifier(options(gh, more));
    await test(gh, verifier);
  } finally {
    await verifier?.close();
    gh.stop();
  }
}

const setupError = async (promise: Promise<unknown>): Promise<VerifierSetupError> => {
  try {
    await promise;
  } catch (error) {
    assert.ok(error instanceof VerifierSetupError, `not a VerifierSetupError: ${String(error)}`);
    assert.ok(!error.message.includes(CLIENT_SECRET), 'the secret is in the message');
    return error;
  }
  throw new Error('createVerifier resolved');
};

void describe('@gatehouse/verifier', () => {
  const gh = new FakeGatehouse();
  let verifier: Verifier;

  before(async () => {
    await gh.start();
    verifier = await createVerifier(options(gh));
  });
  after(async () => {
    await verifier.close();
    gh.stop();
  });

  void it('verifies an access token: who it is and its scopes; refuses what is not one, and a missing scope', async () => {
    const token = await gh.token();
    assert.deepEqual(await verifier.verify(token, { scopes: ['orders:read'] }), {
      userId: 'user-1',
      organizationId: 'org-1',
      credentialId: 'key-1',
      apiKeyId: 'key-1',
      scopes: ['orders:read', 'orders:write'],
    });
    assert.equal(await refusedWith(verifier.verify(await gh.token({}, { typ: 'JWT' }))), 'invalid_token');
    assert.equal(await refusedWith(verifier.verify(`${token}x`)), 'invalid_token');
    assert.equal(await refusedWith(verifier.verify(await gh.token({ token_use: 'session' }))), 'invalid_token');
    assert.equal(await refusedWith(verifier.verify(token, { scopes: ['orders:admin'] })), 'insufficient_scope');
    assert.equal(gh.introspections.length, 0);
  });

  void it("accepts only its own audience: not Gatehouse's default one, nor another resource server's", async () => {
    for (const audience of ['gatehouse', 'https://billing.example.com']) {
      assert.equal(await refusedWith(verifier.verify(await gh.token({}, { audience }))), 'invalid_token');
    }
  });

  void it('says a token of another audience is for the wrong audience, and how to mint one for this resource server', async () => {
    // A token minted without `resource` carries Gatehouse's own audience (JWT_AUDIENCE).
    assert.equal(
      await messageOf(verifier.verify(await gh.token({}, { audience: 'gatehouse' }))),
      `wrong audience: the token is for gatehouse, not this resource server (${AUDIENCE}); mint it with resource=${AUDIENCE}`,
    );
    assert.equal(
      await messageOf(verifier.verify(await gh.token({}, { audience: 'https://billing.example.com' }))),
      `wrong audience: the token is for https://billing.example.com, not this resource server (${AUDIENCE}); mint it ` +
        `with resource=${AUDIENCE}`,
    );
    // What a resource server using the middleware answers: 401, the same sentence.
    assert.deepEqual(await check(verifier, `Bearer ${await gh.token({}, { audience: 'gatehouse' })}`, []), {
      status: 401,
      headers: { 'WWW-Authenticate': 'Bearer realm="gatehouse", error="invalid_token"' },
      body: {
        code: 'invalid_token',
        message: `wrong audience: the token is for gatehouse, not this resource server (${AUDIENCE}); mint it with resource=${AUDIENCE}`,
      },
    });
    // Another failure still reads as before.
    assert.match(
      await messageOf(verifier.verify(await gh.token({}, { typ: 'JWT' }))),
      /^the token is not a valid Gatehouse access token \(ERR_JWT_CLAIM_VALIDATION_FAILED\)$/,
    );
  });

  void it('made a stream of its own, described by host and pid', () => {
    assert.equal(gh.streamsCreated.length, 1);
    assert.equal(gh.streamsCreated[0].method, 'urn:ietf:rfc:8936');
    assert.match(String(gh.streamsCreated[0].description), / pid \d+$/);
    assert.ok(gh.polls.every((poll) => poll.stream === 'stream-1'));
  });

  void it('refuses a revoked key as soon as its SET arrives, and acknowledges it', async () => {
    const token = await gh.token({ client_id: 'key-2' });
    await verifier.verify(token);
    await gh.revoke('set-1', 'key-2');
    const ms = await until(async () => (await refusedWith(verifier.verify(token))) === 'revoked');
    assert.ok(ms < 1000, `refused after ${ms} ms`);
    await until(() => gh.acked.includes('set-1'));
  });

  void it('narrows the scopes of a member whose role changed', async () => {
    const token = await gh.token({ sub: 'user-3' });
    await gh.publish(
      'set-2',
      { format: 'iss_sub', iss: gh.issuer, sub: 'user-3' },
      { [TOKEN_CLAIMS_CHANGE]: { claims: { org: 'org-1', scope: 'orders:read' } } },
    );
    await until(async () => (await verifier.verify(token)).scopes.length === 1);
    assert.equal(await refusedWith(verifier.verify(token, { scopes: ['orders:write'] })), 'insufficient_scope');
  });

  void it("refuses a rotated key's tokens from the end of its grace period (change_type update)", async () => {
    const graceEnds = Math.floor(Date.now() / 1000) + 2;
    const token = await gh.token({ client_id: 'key-rotated' });
    const ended = await gh.token({ client_id: 'key-ended' });
    const update = (expiresAt: number) => ({
      [CREDENTIAL_CHANGE]: { change_type: 'update', credential_type: 'api_key', expires_at: expiresAt },
    });
    await gh.publish('set-3', { format: 'opaque', id: 'key-rotated' }, update(graceEnds));
    await gh.publish('set-4', { format: 'opaque', id: 'key-ended' }, update(graceEnds - 10));
    await until(() => gh.acked.includes('set-4'));
    assert.equal(await refusedWith(verifier.verify(token)), 'accepted');
    assert.equal(await messageOf(verifier.verify(ended)), 'the API key of this token expired after its rotation');
    await until(async () => (await refusedWith(verifier.verify(token))) === 'revoked', 4000);
    assert.ok(Date.now() >= graceEnds * 1000);
  });

  void it('fails closed with feed_stale when the feed stops answering, and recovers by itself', async () => {
    const token = await gh.token();
    gh.down = true;
    await until(async () => (await refusedWith(verifier.verify(token))) === 'feed_stale', 8000);
    gh.down = false;
    await until(async () => (await refusedWith(verifier.verify(token))) === 'accepted', 8000);
  });

  void it('falls back to introspection per token when asked to', async () => {
    const fallback = await createVerifier(options(gh, { fallbackToIntrospection: true }));
    try {
      gh.down = true;
      await until(() => !fallback.fresh, 8000);
      gh.down = false;
      const before = gh.introspections.length;
      const access = await fallback.verify(await gh.token());
      assert.deepEqual(access.scopes, ['orders:read']);
      assert.equal(gh.introspections.length, before + 1);
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

  void it('deletes its stream on close', async () => {
    const other = await createVerifier(options(gh));
    const id = `stream-${gh.streamsCreated.length}`;
    await other.close();
    assert.ok(gh.streamsDeleted.includes(id));
    assert.ok(!gh.streams.has(id));
  });
});

void describe('start: pinned discovery and clear errors', () => {
  /** Another origin that records whatever is sent to it. */
  const elsewhere = createServer((req, res) => {
    seenElsewhere.push(req.headers.authorization ?? '');
    res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
  });
  const seenElsewhere: string[] = [];
  let other = '';
  before(async () => {
    elsewhere.listen(0, '127.0.0.1');
    await once(elsewhere, 'listening');
    other = `http://127.0.0.1:${(elsewhere.address() as { port: number }).port}`;
  });
  after(() => {
    elsewhere.closeAllConnections();
    elsewhere.close();
  });

  const refusedAtStart = async (
    setup: (gh: FakeGatehouse) => void,
  ): Promise<{ gh: FakeGatehouse; message: string }> => {
    const gh = await new FakeGatehouse().start();
    setup(gh);
    try {
      const error = await setupError(createVerifier(options(gh)));
      return { gh, message: error.message };
    } finally {
      gh.stop();
    }
  };

  void it('refuses metadata or an SSF configuration that names another issuer', async () => {
    const metadata = await refusedAtStart((gh) => {
      gh.override['/.well-known/oauth-authorization-server'] = {
        body: { issuer: 'https://evil.example', jwks_uri: `${gh.issuer}/jwks`, introspection_endpoint: gh.issuer },
      };
    });
    assert.match(metadata.message, /oauth-authorization-server names the issuer "https:\/\/evil.example", not http/);
    const ssf = await refusedAtStart((gh) => {
      gh.override['/.well-known/ssf-configuration'] = {
        body: { issuer: `${gh.issuer}/`, configuration_endpoint: `${gh.issuer}/ssf/stream` },
      };
    });
    assert.match(ssf.message, /ssf-configuration names the issuer/);
  });

  void it('refuses endpoints on another origin before it sends a credential there', async () => {
    for (const [path, field] of [
      ['/.well-known/oauth-authorization-server', 'jwks_uri'],
      ['/.well-known/oauth-authorization-server', 'introspection_endpoint'],
      ['/.well-known/ssf-configuration', 'configuration_endpoint'],
    ]) {
      const { message } = await refusedAtStart((gh) => {
        const base =
          path === '/.well-known/ssf-configuration'
            ? { issuer: gh.issuer, configuration_endpoint: `${gh.issuer}/ssf/stream` }
            : { issuer: gh.issuer, jwks_uri: `${gh.issuer}/jwks`, introspection_endpoint: `${gh.issuer}/introspect` };
        gh.override[path] = { body: { ...base, [field]: `${other}/${field}` } };
      });
      assert.ok(message.includes(`gives the ${field} ${other}/${field}, which is not on the issuer's origin`), message);
    }
    // The stream's poll endpoint elsewhere: the stream made is deleted again, and nothing is polled there.
    const { gh, message } = await refusedAtStart((gh) => {
      gh.override['/ssf/stream'] = {
        status: 201,
        body: { stream_id: 's', iss: gh.issuer, aud: AUDIENCE, delivery: { endpoint_url: `${other}/poll` } },
      };
    });
    assert.ok(message.includes(`delivery.endpoint_url ${other}/poll, which is not on the issuer's origin`), message);
    assert.ok(gh.requests.some((r) => r.method === 'DELETE' && r.url.endsWith('stream_id=s')));
    assert.deepEqual(seenElsewhere, []);
  });

  void it("refuses credentials of another resource server (the stream's audience)", async () => {
    const { gh, message } = await refusedAtStart((gh) => {
      gh.override['/ssf/stream'] = {
        status: 201,
        body: {
          stream_id: 's',
          aud: 'https://billing.example.com',
          delivery: { endpoint_url: `${gh.issuer}/ssf/poll/s` },
        },
      };
    });
    assert.equal(
      message,
      `these credentials belong to the resource server of audience https://billing.example.com, not ${AUDIENCE}`,
    );
    assert.ok(gh.requests.some((r) => r.method === 'DELETE'));
  });

  void it('says which URL could not be reached, and why', async () => {
    const gh = await new FakeGatehouse().start();
    gh.stop();
    await once(gh.server, 'close');
    const error = await setupError(createVerifier(options(gh)));
    assert.match(
      error.message,
      new RegExp(
        `^cannot reach Gatehouse at ${gh.issuer}/\\.well-known/oauth-authorization-server: connect ECONNREFUSED`,
      ),
    );
  });

  void it('says which URL answered an error', async () => {
    const { message } = await refusedAtStart((gh) => (gh.override['/.well-known/ssf-configuration'] = { status: 404 }));
    assert.match(message, /^GET http:\/\/127\.0\.0\.1:\d+\/\.well-known\/ssf-configuration answered 404$/);
  });

  void it("says that Gatehouse refused the resource server's credentials, without the secret", async () => {
    const gh = await new FakeGatehouse().start();
    try {
      const error = await setupError(createVerifier({ ...options(gh), clientSecret: `${CLIENT_SECRET}-old` }));
      assert.equal(
        error.message,
        `Gatehouse refused the resource server's credentials at ${gh.issuer}/ssf/stream (401): check clientId and clientSecret`,
      );
    } finally {
      gh.stop();
    }
  });

  void it('refuses an issuer that is not a URL', async () => {
    await assert.rejects(
      createVerifier({ issuer: 'gatehouse', audience: AUDIENCE, clientId: 'c', clientSecret: 's' }),
      (e: Error) => e instanceof VerifierSetupError && e.message === 'the issuer gatehouse is not a URL',
    );
  });
});

void describe('redirects: never followed, so no credential, poll body or token goes elsewhere', () => {
  /** Another origin that records whatever reaches it, and answers as Gatehouse would (any JSON object). */
  const seenElsewhere: Array<{ method: string; url: string; authorization?: string; body: string }> = [];
  const elsewhere = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      seenElsewhere.push({
        method: req.method ?? '',
        url: req.url ?? '',
        authorization: req.headers.authorization,
        body,
      });
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"keys":[],"sets":{}}');
    });
  });
  let other = '';
  before(async () => {
    elsewhere.listen(0, '127.0.0.1');
    await once(elsewhere, 'listening');
    other = `http://127.0.0.1:${(elsewhere.address() as { port: number }).port}`;
  });
  after(() => {
    elsewhere.closeAllConnections();
    elsewhere.close();
  });
  const redirect = (status: number, location: string) => ({ status, headers: { location } });

  void it('refuses a redirect at discovery and at the stream, to another origin or its own, with a clear error', async () => {
    seenElsewhere.length = 0;
    for (const [path, status, where] of [
      ['/.well-known/oauth-authorization-server', 302, 'other'],
      ['/.well-known/oauth-authorization-server', 301, 'own'],
      ['/.well-known/ssf-configuration', 308, 'other'],
      ['/ssf/stream', 307, 'other'],
      ['/ssf/stream', 308, 'own'],
    ] as const) {
      const gh = await new FakeGatehouse().start();
      const method = path === '/ssf/stream' ? 'POST' : 'GET';
      const target = `${where === 'other' ? other : gh.issuer}/moved${path}`;
      gh.override[path] = redirect(status, target);
      try {
        const { message } = await setupError(createVerifier(options(gh)));
        const origin = where === 'other' ? `off the issuer's origin ${gh.issuer}` : "on the issuer's origin";
        assert.equal(
          message,
          `${method} ${gh.issuer}${path} answered ${status}, a redirect to "${target}" (${origin}): refused, the verifier follows no redirect`,
        );
        // Nothing was sent where the redirect pointed, on the issuer's origin either.
        assert.deepEqual(
          gh.requests.filter((r) => r.url.includes('/moved/')),
          [],
        );
      } finally {
        gh.stop();
      }
    }
    assert.deepEqual(seenElsewhere, []);
  });

  void it('refuses a redirected poll, at start and once running, without resending its body or credentials', async () => {
    seenElsewhere.length = 0;
    // At start: the first poll of the stream is redirected; the stream is deleted again.
    const gh = await new FakeGatehouse().start();
    gh.override['/ssf/poll/stream-1'] = redirect(307, `${other}/ssf/poll/stream-1`);
    try {
      const { message } = await setupError(createVerifier(options(gh)));
      assert.match(message, /^POST http:\/\/127\.0\.0\.1:\d+\/ssf\/poll\/stream-1 answered 307, a redirect to/);
      assert.ok(gh.requests.some((r) => r.method === 'DELETE' && r.url.endsWith('stream_id=stream-1')));
    } finally {
      gh.stop();
    }
    // Once running, with acknowledgements to send: the feed goes stale (verify refuses), nothing reaches the other origin.
    await withVerifier(async (gh, verifier) => {
      await gh.revoke('jti-1', 'key-9');
      await until(() => gh.acked.includes('jti-1'));
      await gh.revoke('jti-2', 'key-8', { quiet: true });
      gh.override['/ssf/poll/stream-1'] = redirect(308, `${other}/ssf/poll/stream-1`);
      gh.wake();
      await until(() => gh.requests.filter((r) => r.url.endsWith('/ssf/poll/stream-1')).length > 0 && !verifier.fresh);
      assert.equal(await refusedWith(verifier.verify(await gh.token())), 'feed_stale');
      const redirected = gh.requests.filter((r) => r.url.endsWith('/ssf/poll/stream-1'));
      await until(() => gh.requests.filter((r) => r.url.endsWith('/ssf/poll/stream-1')).length > redirected.length);
    });
    assert.deepEqual(seenElsewhere, []);
  });

  void it('refuses a redirected introspection, so the token is not sent elsewhere', async () => {
    seenElsewhere.length = 0;
    await withVerifier(
      async (gh, verifier) => {
        gh.override['/introspect'] = redirect(307, `${other}/introspect`);
        // Issued before the stream began: only introspection can confirm it.
        const token = await gh.token();
        assert.equal(await refusedWith(verifier.verify(token)), 'feed_stale');
        assert.ok(gh.requests.some((r) => r.url.endsWith('/introspect')));
      },
      (gh) => (gh.dateOffsetMs = 60_000),
    );
    assert.deepEqual(seenElsewhere, []);
  });

  void it('does not follow a redirected JWKS either', async () => {
    seenElsewhere.length = 0;
    await withVerifier(async (gh, verifier) => {
      gh.override['/jwks'] = redirect(302, `${other}/jwks`);
      assert.equal(await refusedWith(verifier.verify(await gh.token())), 'feed_stale');
      assert.ok(gh.requests.some((r) => r.url.endsWith('/jwks')));
    });
    assert.deepEqual(seenElsewhere, []);
  });
});

void describe('the feed', () => {
  void it('leaves a SET it cannot verify for a transient reason unacknowledged, stale, and applies it when it can', () =>
    withVerifier(async (gh, verifier) => {
      // The JWKS has not been fetched yet (no token, no SET): the SET needs it.
      gh.jwksDown = true;
      await gh.revoke('transient-1', 'key-t');
      await gh.revoke('after-it', 'key-after');
      await sleep(1500);
      assert.equal(verifier.fresh, false);
      assert.deepEqual(gh.setErrs, {});
      assert.deepEqual(gh.acked, []);
      gh.jwksDown = false;
      await until(() => gh.acked.includes('transient-1') && gh.acked.includes('after-it'), 8000);
      await until(() => verifier.fresh);
      assert.equal(await refusedWith(verifier.verify(await gh.token({ client_id: 'key-t' }))), 'revoked');
    }));

  void it('tells an invalid SET (setErrs) from a failure that may pass (retried): jose 6 error classes', () => {
    const claim = (name: string) => new joseErrors.JWTClaimValidationFailed('unexpected', {}, name);
    assert.equal(invalidSetError(new joseErrors.JWSSignatureVerificationFailed()), 'invalid_key');
    assert.equal(invalidSetError(new joseErrors.JOSEAlgNotAllowed('alg')), 'invalid_key');
    assert.equal(invalidSetError(new joseErrors.JOSENotSupported('alg')), 'invalid_key');
    assert.equal(invalidSetError(new joseErrors.JWSInvalid('bad')), 'invalid_request');
    assert.equal(invalidSetError(new joseErrors.JWTInvalid('bad')), 'invalid_request');
    assert.equal(invalidSetError(claim('typ')), 'invalid_request');
    assert.equal(invalidSetError(claim('iss')), 'invalid_issuer');
    assert.equal(invalidSetError(claim('aud')), 'invalid_audience');
    for (const transient of [
      new joseErrors.JWKSNoMatchingKey(),
      new joseErrors.JWKSTimeout(),
      new joseErrors.JWKSInvalid('malformed'),
      new joseErrors.JOSEError('Expected 200 OK from the JSON Web Key Set HTTP response'),
      new TypeError('fetch failed'),
    ]) {
      assert.equal(invalidSetError(transient), undefined, transient.constructor.name);
    }
  });

  void it('reports a SET that is itself invalid in setErrs, and stays fresh', () =>
    withVerifier(async (gh, verifier) => {
      const stranger = await generateKeyPair('ES256');
      await gh.publish('forged', { format: 'opaque', id: 'key-x' }, revoke(), { key: stranger });
      await gh.publish('elsewhere', { format: 'opaque', id: 'key-y' }, revoke(), {
        audience: 'https://billing.example.com',
      });
      await until(() => gh.setErrs.forged !== undefined && gh.setErrs.elsewhere !== undefined);
      assert.equal(gh.setErrs.forged.err, 'invalid_key');
      assert.equal(gh.setErrs.elsewhere.err, 'invalid_audience');
      assert.ok(verifier.fresh);
      assert.equal(await refusedWith(verifier.verify(await gh.token({ client_id: 'key-x' }))), 'accepted');
    }));

  void it('drains a burst of 2,500 events while away: fresh and correct within seconds, acks within the body limit', () =>
    withVerifier(
      async (gh, verifier) => {
        gh.down = true;
        await until(() => !verifier.fresh, 5000);
        for (let i = 0; i < 2500; i += 1)
          await gh.revoke(`00000000-0000-4000-8000-${String(i).padStart(12, '0')}`, `burst-${i}`);
        const polled = gh.polls.length;
        const back = Date.now();
        gh.down = false;
        await until(() => verifier.fresh, 20_000);
        const ms = Date.now() - back;
        for (const i of [0, 1234, 2499]) {
          assert.equal(await refusedWith(verifier.verify(await gh.token({ client_id: `burst-${i}` }))), 'revoked');
        }
        await until(() => gh.acked.length === 2500, 5000);
        const polls = gh.polls.slice(polled);
        assert.ok(polls.every((p) => p.ack.length <= 1000 && p.bytes <= 64 * 1024));
        console.log(`2,500 events drained in ${ms} ms, ${polls.length} polls`);
        assert.ok(ms < 10_000, `${ms} ms`);
      },
      undefined,
      { maxStalenessSeconds: 2 },
    ));

  void it('sends at most 1,000 acks and 50 setErrs a poll, the rest with the next polls at once', () =>
    withVerifier(async (gh, verifier) => {
      gh.ignoreMaxEvents = true;
      const stranger = await generateKeyPair('ES256');
      gh.down = true;
      for (let i = 0; i < 2200; i += 1) await gh.revoke(`ok-${i}`, `many-${i}`);
      for (let i = 0; i < 120; i += 1)
        await gh.publish(`bad-${i}`, { format: 'opaque', id: 'x' }, revoke(), { key: stranger });
      const polled = gh.polls.length;
      gh.down = false;
      await until(() => gh.acked.length === 2200 && Object.keys(gh.setErrs).length === 120, 8000);
      const polls = gh.polls.slice(polled);
      assert.ok(Math.max(...polls.map((p) => p.ack.length)) === 1000);
      assert.ok(polls.every((p) => p.ack.length <= 1000 && Object.keys(p.setErrs).length <= 50));
      assert.ok(polls.every((p) => Object.values(p.setErrs).every((e) => e.description.length <= 200)));
      assert.ok(polls.every((p) => p.bytes <= 64 * 1024));
      await until(() => verifier.fresh);
    }));

  void it('is not fresh while Gatehouse says more is available, and polls again at once', () =>
    withVerifier(async (gh, verifier) => {
      gh.pageSize = 1;
      gh.pollDelayMs = 150;
      await until(() => verifier.fresh);
      for (let i = 0; i < 25; i += 1) await gh.revoke(`page-${i}`, `paged-${i}`, { quiet: true });
      const published = Date.now();
      gh.wake();
      let wasStale = false;
      await until(() => {
        if (gh.acked.length < 25) wasStale ||= !verifier.fresh;
        return gh.acked.length === 25 && verifier.fresh;
      }, 10_000);
      // 25 pages of 150 ms take longer than maxStalenessSeconds (1 s): the feed was behind, so not fresh meanwhile.
      assert.ok(wasStale);
      assert.ok(Date.now() - published < 6000, `${Date.now() - published} ms`);
    }));

  void it('does not spin when long polls come back empty at once (a server that does not wait)', () =>
    withVerifier(
      async (gh, verifier) => {
        const polled = gh.polls.length;
        await sleep(2500);
        const longPolls = gh.polls.slice(polled).filter((p) => !p.returnImmediately);
        assert.ok(longPolls.length <= 4, `${longPolls.length} long polls in 2.5 s`);
        assert.ok(verifier.fresh);
      },
      (gh) => (gh.waitMs = 0),
      { maxStalenessSeconds: 10 },
    ));

  void it('honours Retry-After on 429', () =>
    withVerifier(
      async (gh) => {
        gh.tooManyPolls = '2';
        const polled = gh.polls.length;
        await sleep(2500);
        const longPolls = gh.polls.slice(polled).filter((p) => !p.returnImmediately);
        assert.ok(longPolls.length <= 2, `${longPolls.length} long polls in 2.5 s`);
        if (longPolls.length === 2) assert.ok(longPolls[1].at - longPolls[0].at >= 1900);
      },
      undefined,
      { maxStalenessSeconds: 10 },
    ));
});

void describe('tokens issued before the stream began', () => {
  const old = (gh: FakeGatehouse, claims: Record<string, unknown> = {}) =>
    gh.token({ iat: Math.floor(Date.now() / 1000) - 30, ...claims });

  void it('are confirmed once by introspection, shared by concurrent verifies, with its live scopes', () =>
    withVerifier(
      async (gh, verifier) => {
        const token = await old(gh);
        gh.introspectionDelayMs = 100;
        const results = await Promise.all(Array.from({ length: 10 }, () => verifier.verify(token)));
        assert.equal(gh.introspections.length, 1);
        assert.ok(results.every((r) => r.scopes.join(' ') === 'orders:read'));
        assert.equal(await refusedWith(verifier.verify(token, { scopes: ['orders:write'] })), 'insufficient_scope');
        assert.equal(gh.introspections.length, 1);
        // A token issued after S needs none.
        await verifier.verify(await gh.token({ iat: Math.floor(Date.now() / 1000) + 5 }));
        assert.equal(gh.introspections.length, 1);
        // Feed events after S still apply on top.
        await gh.revoke('after-s', 'key-1');
        await until(async () => (await refusedWith(verifier.verify(token))) === 'revoked');
      },
      (gh) => (gh.dateOffsetMs = 0),
    ));

  void it('are refused when introspection says inactive (kept), and feed_stale while it cannot be asked (not kept)', () =>
    withVerifier(
      async (gh, verifier) => {
        const revoked = await old(gh, { client_id: 'key-gone' });
        const token = await old(gh);
        gh.introspection = (t) =>
          t === revoked ? { status: 200, body: { active: false } } : { status: 503, body: {} };
        assert.equal(await messageOf(verifier.verify(revoked)), 'the token is no longer active at Gatehouse');
        assert.equal(await refusedWith(verifier.verify(revoked)), 'revoked');
        assert.equal(gh.introspections.filter((t) => t === revoked).length, 1);
        assert.equal(
          await messageOf(verifier.verify(token)),
          'cannot confirm a token issued before this verifier started',
        );
        assert.equal(await refusedWith(verifier.verify(token)), 'feed_stale');
        gh.introspection = () => ({
          status: 200,
          body: { active: true, sub: 'user-1', org: 'org-1', client_id: 'key-1', scope: 'orders:read orders:write' },
        });
        assert.deepEqual((await verifier.verify(token)).scopes, ['orders:read', 'orders:write']);
        assert.equal(gh.introspections.filter((t) => t === token).length, 3);
      },
      (gh) => (gh.dateOffsetMs = 0),
    ));

  void it("are asked again once introspection's exp (the key's expiry) has passed", () =>
    withVerifier(
      async (gh, verifier) => {
        const token = await old(gh);
        const keyExpires = Math.floor(Date.now() / 1000) + 1;
        gh.introspection = () =>
          Date.now() < keyExpires * 1000
            ? { status: 200, body: { active: true, scope: 'orders:read', exp: keyExpires } }
            : { status: 200, body: { active: false } };
        assert.equal(await refusedWith(verifier.verify(token)), 'accepted');
        await until(async () => (await refusedWith(verifier.verify(token))) === 'revoked', 3000);
        assert.equal(gh.introspections.length, 2);
      },
      (gh) => (gh.dateOffsetMs = 0),
    ));

  void it('after a lost stream (404): a new stream and a new S, older tokens confirmed again, not fresh until it answers', () =>
    withVerifier(async (gh, verifier) => {
      // S is a minute ago: a token issued now needs no introspection.
      const recent = await gh.token();
      const old = await gh.token({ iat: Math.floor(Date.now() / 1000) - 120 });
      assert.equal(await refusedWith(verifier.verify(recent)), 'accepted');
      assert.equal(await refusedWith(verifier.verify(old)), 'accepted');
      assert.equal(gh.introspections.length, 1);
      gh.dateOffsetMs = 0;
      gh.pollDelayMs = 300;
      gh.dropStreams();
      await until(() => !verifier.fresh, 5000);
      assert.equal(await refusedWith(verifier.verify(recent)), 'feed_stale');
      await until(() => gh.streamsCreated.length === 2 && verifier.fresh, 8000);
      assert.equal(await refusedWith(verifier.verify(recent)), 'accepted');
      assert.equal(await refusedWith(verifier.verify(old)), 'accepted');
      assert.deepEqual(gh.introspections, [old, recent, old]);
      const polls = gh.polls.filter((p) => p.stream === 'stream-2');
      assert.ok(polls.length > 0);
    }));
});

void describe('allowlists: a token whose key has allowed_cidrs, from an address inside it only', () => {
  void it('accepts the address inside the list, refuses one outside it or none at all', () =>
    withVerifier(async (gh, verifier) => {
      const token = await gh.token({ allowed_cidrs: ['10.0.0.0/8', '2001:db8::/32'] });
      const from = (clientAddress?: string) => refusedWith(verifier.verify(token, { clientAddress }));
      assert.equal(await from('10.1.2.3'), 'accepted');
      assert.equal(await from('::ffff:10.1.2.3'), 'accepted');
      assert.equal(await from('2001:db8:1::9'), 'accepted');
      assert.equal(await from('192.0.2.1'), 'address_not_allowed');
      assert.equal(await from('2001:db9::1'), 'address_not_allowed');
      // Fails closed: a caller that gives no address learns nothing from a token of such a key.
      assert.equal(await from(undefined), 'address_not_allowed');
      assert.equal(await from('not an address'), 'address_not_allowed');
      assert.equal(await messageOf(verifier.verify(token)), "the token's API key is not allowed from this address");
      // A token without the claim: any address, or none.
      assert.equal(await refusedWith(verifier.verify(await gh.token())), 'accepted');
      assert.equal(await refusedWith(verifier.verify(await gh.token(), { clientAddress: '192.0.2.1' })), 'accepted');
    }));

  void it('refuses a token whose allowed_cidrs is not a list of strings', () =>
    withVerifier(async (gh, verifier) => {
      for (const allowed_cidrs of ['10.0.0.0/8', [10], {}]) {
        const token = await gh.token({ allowed_cidrs });
        assert.equal(await refusedWith(verifier.verify(token, { clientAddress: '10.0.0.1' })), 'invalid_token');
      }
    }));

  void it('reads the client address from the peer, or behind trusted proxies from X-Forwarded-For', () =>
    withVerifier(
      (_gh, verifier) => {
        const request = (remoteAddress: string, forwarded?: string) => ({
          socket: { remoteAddress },
          headers: forwarded === undefined ? {} : { 'x-forwarded-for': forwarded },
        });
        // An untrusted peer is the client, whatever it forwards.
        assert.equal(verifier.clientAddress(request('203.0.113.5', '10.9.9.9')), '203.0.113.5');
        assert.equal(verifier.clientAddress(request('::ffff:203.0.113.5')), '203.0.113.5');
        // A trusted proxy: the entry it added; a chain of trusted proxies is walked from the right.
        assert.equal(verifier.clientAddress(request('127.0.0.1', '198.51.100.7')), '198.51.100.7');
        assert.equal(verifier.clientAddress(request('127.0.0.1', '6.6.6.6, 198.51.100.7, 172.16.0.2')), '198.51.100.7');
        assert.equal(verifier.clientAddress(request('127.0.0.1', '198.51.100.7,  172.16.0.2')), '198.51.100.7');
        // Only trusted proxies: the left-most address; no header: the proxy itself.
        assert.equal(verifier.clientAddress(request('127.0.0.1', '172.16.0.3')), '172.16.0.3');
        assert.equal(verifier.clientAddress(request('127.0.0.1')), '127.0.0.1');
        // A forwarded value that is not an address gives no address (and so refuses a token with an allowlist).
        assert.equal(verifier.clientAddress(request('127.0.0.1', 'unknown')), undefined);
        return Promise.resolve();
      },
      () => undefined,
      { trustedProxies: ['127.0.0.1', '172.16.0.0/12'] },
    ));

  void it('refuses at start a trustedProxies entry that is not a CIDR or an address', async () => {
    const gh = await new FakeGatehouse().start();
    try {
      const error = await setupError(createVerifier(options(gh, { trustedProxies: ['10.0.0.0/8', 'proxy.local'] })));
      assert.equal(error.message, 'trustedProxies: not a CIDR or an address: proxy.local');
    } finally {
      gh.stop();
    }
  });

  void it('the middleware and the guard answer 403 from an address outside the list', () =>
    withVerifier(async (gh, verifier) => {
      await until(() => verifier.fresh, 8000);
      const token = await gh.token({ allowed_cidrs: ['10.0.0.0/8'] });
      const run = async (remoteAddress: string) => {
        const req = { headers: { authorization: `Bearer ${token}` }, socket: { remoteAddress } };
        const res = {
          code: 0,
          body: undefined as unknown,
          status(c: number) {
            this.code = c;
            return this;
          },
          set() {
            return this;
          },
          json(b: unknown) {
            this.body = b;
            return this;
          },
        };
        let passed = false;
        await new Promise<void>((resolve) => {
          gatehouse(verifier)(req, res, () => {
            passed = true;
            resolve();
          });
          setTimeout(resolve, 200);
        });
        return { passed, code: res.code, body: res.body };
      };
      assert.deepEqual(await run('10.0.0.7'), { passed: true, code: 0, body: undefined });
      assert.deepEqual(await run('192.0.2.7'), {
        passed: false,
        code: 403,
        body: { code: 'address_not_allowed', message: "the token's API key is not allowed from this address" },
      });
      const context = (remoteAddress: string) => ({
        switchToHttp: () => ({
          getRequest: () => ({ headers: { authorization: `Bearer ${token}` }, socket: { remoteAddress } }),
          getResponse: () => ({ setHeader: () => undefined }),
        }),
      });
      assert.equal(await new GatehouseGuard(verifier).canActivate(context('10.0.0.7')), true);
      await assert.rejects(
        new GatehouseGuard(verifier).canActivate(context('192.0.2.7')),
        (e: GatehouseRefusal) => e.statusCode === 403 && e.code === 'address_not_allowed',
      );
    }));

  void it("falls back to introspection with the key's list as Gatehouse answers it", () =>
    withVerifier(
      async (gh, verifier) => {
        gh.introspection = () => ({
          status: 200,
          body: {
            active: true,
            sub: 'user-1',
            org: 'org-1',
            client_id: 'key-1',
            scope: '',
            allowed_cidrs: ['10.0.0.0/8'],
          },
        });
        gh.down = true;
        await until(() => !verifier.fresh, 8000);
        gh.down = false;
        const token = await gh.token();
        assert.equal(await refusedWith(verifier.verify(token, { clientAddress: '10.0.0.1' })), 'accepted');
        assert.equal(await refusedWith(verifier.verify(token, { clientAddress: '11.0.0.1' })), 'address_not_allowed');
      },
      () => undefined,
      { fallbackToIntrospection: true },
    ));
});

function revoke(): object {
  return { [CREDENTIAL_CHANGE]: { change_type: 'revoke', credential_type: 'api_key' } };
}
