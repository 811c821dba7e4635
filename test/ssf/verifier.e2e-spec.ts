import { Controller, Get, Module, Req, UseGuards } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ExpressPlatform } from '../../src/common/http-platform';
import Express from 'express';
import request from 'supertest';
import { gatehouse } from '../../verifier/src/express';
import { GatehouseGuard } from '../../verifier/src/nest';
import { MembersService } from '../../src/members/members.service';
import { ResourceServersService } from '../../src/resource-servers/resource-servers.service';
import { createVerifier, VerifiedAccess, Verifier, VerifyError } from '../../verifier/src/index';
import { freePort } from '../support/ports';
import { msUntil, refusal } from '../support/verifier-checks';
import { TcpProxy } from '../support/tcp-proxy';
import { createTestApp, DATABASE_KIND, TestApp, TestUser } from '../support/test-app';
import { SET_UP_TIMEOUT_MS } from '../support/timeouts';

/**
 * The verifier library (verifier/) against a listening Gatehouse: a revocation, whatever its cause, is refused by the
 * resource server once its event arrives, with no call to Gatehouse per request. How soon (within a second,
 * docs/revocation-feed.md#measured) is printed here and measured by `npm run bench:revocation` on a quiet machine. On
 * PostgreSQL the revocations are made at one instance and the verifier follows another; a TCP proxy between the
 * verifier and Gatehouse cuts the network or refuses connections (a restart). Each verifier follows a stream of its
 * own and confirms tokens issued before its start by introspection (docs/adr/0031-revocation-feed-in-production.md).
 */
const AUDIENCE = 'https://verified.example.com';
const OTHER_AUDIENCE = 'https://other.example.com';

/** A fetch that records what the verifier asked Gatehouse, and what it answered. */
function recordingFetch(): { fetch: typeof fetch; calls: Array<{ method: string; url: string; status: number }> } {
  const calls: Array<{ method: string; url: string; status: number }> = [];
  return {
    calls,
    fetch: async (input, init) => {
      const response = await fetch(input, init);
      calls.push({
        method: init?.method ?? 'GET',
        url: typeof input === 'string' ? input : input instanceof URL ? input.href : input.url,
        status: response.status,
      });
      return response;
    },
  };
}

describe(`the verifier against Gatehouse on ${DATABASE_KIND}`, () => {
  let followed: TestApp;
  let revoking: TestApp;
  let proxy: TcpProxy;
  let verifier: Verifier;
  let admin: TestUser;
  let issuer: string;
  let credentials: { clientId: string; clientSecret: string };

  beforeAll(async () => {
    const port = await freePort();
    proxy = new TcpProxy('127.0.0.1', port);
    await proxy.start();
    issuer = `http://127.0.0.1:${proxy.port}`;
    const env = { JWT_ISSUER: issuer, PUBLIC_BASE_URL: issuer, EXPOSED_REPORT_MIN_RESPONSE_MS: '0' };
    followed = await createTestApp({ env });
    await followed.app.listen(port, '127.0.0.1');
    // SQLite has one process: the same instance. PostgreSQL: a second instance on the same database.
    revoking = DATABASE_KIND === 'postgres' ? await createTestApp({ database: followed.database, env }) : followed;
    admin = await revoking.user({ org: 'verified', role: 'admin' });
    const server = await revoking.get(ResourceServersService).register('Verified', AUDIENCE);
    credentials = { clientId: server.clientId, clientSecret: server.clientSecret };
    await revoking.get(ResourceServersService).register('Other', OTHER_AUDIENCE);
    verifier = await createVerifier({ issuer, audience: AUDIENCE, ...credentials, maxStalenessSeconds: 2 });
  }, SET_UP_TIMEOUT_MS);

  afterAll(async () => {
    await verifier?.close();
    await proxy?.close();
    if (revoking !== followed) await revoking?.close();
    await followed?.close();
  });

  const tokenFor = async (user: TestUser, label: string) => {
    const key = await revoking.createKey(user, label);
    const token = await revoking.exchange(key.value, { resource: AUDIENCE });
    expect(await refusal(verifier, token)).toBe('accepted');
    return { key, token };
  };

  it.each(['user', 'admin', 'exposed', 'member removal'])(
    'refuses a key revoked by %s, through the feed',
    async (cause) => {
      const owner = cause === 'member removal' ? await revoking.user({ org: 'verified', role: 'member' }) : admin;
      const { key, token } = await tokenFor(owner, cause);
      const bearer = `Bearer ${admin.token}`;
      const start = performance.now();
      if (cause === 'user')
        await revoking.http().delete(`/v1/user-api-keys/${key.id}`).set('Authorization', bearer).expect(200);
      if (cause === 'admin') {
        await revoking.http().delete(`/v1/organization/api-keys/${key.id}`).set('Authorization', bearer).expect(200);
      }
      if (cause === 'exposed')
        await revoking
          .http()
          .post('/v1/api-keys/exposed')
          .send({ keys: [key.value] })
          .expect(202);
      if (cause === 'member removal') {
        await revoking.get(MembersService).remove(owner.organizationId, owner.userId);
      }
      await msUntil(verifier, token, 'revoked');
      console.log(
        `${cause} -> refused by the verifier (${DATABASE_KIND}): ${(performance.now() - start).toFixed(0)} ms`,
      );
    },
  );

  it('narrows the scopes of a member whose role changed', async () => {
    const member = await revoking.user({ org: 'verified', role: 'admin' });
    const key = await revoking.createKey(member, 'demoted', { scopes: ['api_keys:read', 'api_keys:create'] });
    const token = await revoking.exchange(key.value, { resource: AUDIENCE });
    expect(await refusal(verifier, token, ['api_keys:create'])).toBe('accepted');
    await revoking.get(MembersService).setRole(member.organizationId, member.userId, 'viewer');
    await msUntil(verifier, token, 'insufficient_scope', { scopes: ['api_keys:create'] });
    expect(await refusal(verifier, token, ['api_keys:read'])).toBe('accepted');
  });

  it('guards a real Nest resource server, and an Express one: 200 with who it is, 401, 403, and 401 once revoked', async () => {
    @Controller('orders')
    class OrdersController {
      @Get()
      @UseGuards(new GatehouseGuard(verifier, ['api_keys:read']))
      list(@Req() request: { gatehouse: VerifiedAccess }) {
        return { organization: request.gatehouse.organizationId };
      }

      @Get('admin')
      @UseGuards(new GatehouseGuard(verifier, ['api_keys:manage']))
      admin() {
        return {};
      }
    }
    @Module({ controllers: [OrdersController] })
    class ResourceServerModule {}
    const nest = await NestFactory.create(ResourceServerModule, new ExpressPlatform(), { logger: false });
    await nest.init();
    const express = Express();
    express.get('/orders', gatehouse(verifier, ['api_keys:read']), (req, res) => {
      res.json({ organization: (req as unknown as { gatehouse: VerifiedAccess }).gatehouse.organizationId });
    });
    try {
      const { key, token } = await tokenFor(admin, 'guarded');
      for (const server of [nest.getHttpServer(), express]) {
        const ok = await request(server).get('/orders').set('Authorization', `Bearer ${token}`).expect(200);
        expect(ok.body).toEqual({ organization: admin.organizationId });
        const missing = await request(server).get('/orders').expect(401);
        expect(missing.headers['www-authenticate']).toBe('Bearer realm="gatehouse"');
      }
      const forbidden = await request(nest.getHttpServer())
        .get('/orders/admin')
        .set('Authorization', `Bearer ${token}`);
      expect(forbidden.status).toBe(403);
      await revoking
        .http()
        .delete(`/v1/user-api-keys/${key.id}`)
        .set('Authorization', `Bearer ${admin.token}`)
        .expect(200);
      await msUntil(verifier, token, 'revoked');
      for (const server of [nest.getHttpServer(), express]) {
        const refused = await request(server).get('/orders').set('Authorization', `Bearer ${token}`).expect(401);
        expect(refused.headers['www-authenticate']).toBe('Bearer realm="gatehouse", error="invalid_token"');
      }
    } finally {
      await nest.close();
    }
  });

  it("accepts only its own audience: not a token minted without resource (Gatehouse's own), nor another resource server's", async () => {
    const key = await revoking.createKey(admin, 'audiences');
    expect(await refusal(verifier, await revoking.exchange(key.value))).toBe('invalid_token');
    expect(await refusal(verifier, await revoking.exchange(key.value, { resource: OTHER_AUDIENCE }))).toBe(
      'invalid_token',
    );
    expect(await refusal(verifier, await revoking.exchange(key.value, { resource: AUDIENCE }))).toBe('accepted');
  });

  it('follows a stream of its own (a second verifier too: both see every revocation), and deletes it when closed', async () => {
    const recorded = recordingFetch();
    const second = await createVerifier({ issuer, audience: AUDIENCE, ...credentials, fetch: recorded.fetch });
    let closed = false;
    try {
      const polls = recorded.calls.filter((call) => call.url.startsWith(`${issuer}/ssf/poll`));
      const streamId = /\/ssf\/poll\/([^/?]+)$/.exec(polls[0].url)?.[1] ?? '';
      expect(recorded.calls.find((call) => call.method === 'POST' && call.url === `${issuer}/ssf/stream`)?.status).toBe(
        201,
      );
      expect(polls.every((call) => call.url === `${issuer}/ssf/poll/${streamId}`)).toBe(true);
      const basic = `Basic ${Buffer.from(
        `${encodeURIComponent(credentials.clientId)}:${encodeURIComponent(credentials.clientSecret)}`,
      ).toString('base64')}`;
      const stream = await followed
        .http()
        .get('/ssf/stream')
        .query({ stream_id: streamId })
        .set('Authorization', basic);
      expect(stream.status).toBe(200);
      expect(stream.body).toMatchObject({
        stream_id: streamId,
        aud: AUDIENCE,
        description: expect.stringMatching(/ pid \d+$/),
      });

      const { key, token } = await tokenFor(admin, 'two verifiers');
      expect(await refusal(second, token)).toBe('accepted');
      await revoking
        .http()
        .delete(`/v1/user-api-keys/${key.id}`)
        .set('Authorization', `Bearer ${admin.token}`)
        .expect(200);
      await Promise.all([msUntil(verifier, token, 'revoked'), msUntil(second, token, 'revoked')]);

      await second.close();
      closed = true;
      expect(recorded.calls.at(-1)).toEqual({
        method: 'DELETE',
        url: `${issuer}/ssf/stream?stream_id=${streamId}`,
        status: 204,
      });
      await followed.http().get('/ssf/stream').query({ stream_id: streamId }).set('Authorization', basic).expect(404);
    } finally {
      if (!closed) await second.close();
    }
  });

  it('started after a revocation and a role change: confirms older tokens once by introspection (refused, narrowed)', async () => {
    const member = await revoking.user({ org: 'verified', role: 'admin' });
    const kept = await revoking.createKey(member, 'kept', { scopes: ['api_keys:read', 'api_keys:create'] });
    const gone = await revoking.createKey(member, 'gone');
    const keptToken = await revoking.exchange(kept.value, { resource: AUDIENCE });
    const goneToken = await revoking.exchange(gone.value, { resource: AUDIENCE });
    await revoking
      .http()
      .delete(`/v1/user-api-keys/${gone.id}`)
      .set('Authorization', `Bearer ${member.token}`)
      .expect(200);
    await revoking.get(MembersService).setRole(member.organizationId, member.userId, 'viewer');

    const recorded = recordingFetch();
    const late = await createVerifier({ issuer, audience: AUDIENCE, ...credentials, fetch: recorded.fetch });
    try {
      await expect(late.verify(goneToken)).rejects.toEqual(
        new VerifyError('revoked', 'the token is no longer active at Gatehouse'),
      );
      const answers = await Promise.all([1, 2, 3].map(() => refusal(late, keptToken, ['api_keys:read'])));
      expect(answers).toEqual(['accepted', 'accepted', 'accepted']);
      expect(await refusal(late, keptToken, ['api_keys:create'])).toBe('insufficient_scope');
      expect(await refusal(late, goneToken)).toBe('revoked');
      const introspections = recorded.calls.filter((call) => call.url === `${issuer}/oauth/introspect`);
      expect(introspections).toHaveLength(2);
    } finally {
      await late.close();
    }
  });

  it('a network cut ends in feed_stale, and the verifier recovers by itself', async () => {
    const { token } = await tokenFor(admin, 'network cut');
    proxy.blackhole();
    const stale = await msUntil(verifier, token, 'feed_stale');
    await proxy.restore();
    const recovered = await msUntil(verifier, token, 'accepted');
    console.log(
      `network cut: feed_stale after ${stale.toFixed(0)} ms, recovered ${recovered.toFixed(0)} ms after it ended`,
    );
  }, 30_000);

  it('Gatehouse refusing connections (a restart) ends in feed_stale, then recovers with the revocations made meanwhile', async () => {
    await msUntil(verifier, 'not-a-token', 'invalid_token', { limitMs: 20_000 });
    const { key, token } = await tokenFor(admin, 'restart');
    await proxy.refuse();
    await msUntil(verifier, token, 'feed_stale');
    await revoking
      .http()
      .delete(`/v1/user-api-keys/${key.id}`)
      .set('Authorization', `Bearer ${admin.token}`)
      .expect(200);
    await proxy.restore();
    await msUntil(verifier, token, 'revoked');
  }, 30_000);
});
