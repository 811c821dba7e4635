import { randomUUID } from 'node:crypto';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ApiKeyCodec } from '../../src/api-keys/api-key-codec';
import { SecretHasher } from '../../src/common/secret-hasher';
import { KeyExchangeRules } from '../../src/auth/key-exchange';
import { createTestApp, DATABASE_KIND, TestApp } from '../../test/support/test-app';

/**
 * `npm run bench:timings`: step 4 of POST /v1/token (docs/api.md#post-v1token) costs the same whether
 * the key id exists or not. Prints the medians of the service call, of whole HTTP answers, and of one
 * secret comparison. That the unknown id's secret is compared at all is asserted by
 * test/auth/token.e2e-spec.ts.
 */
describe('POST /v1/token: an unknown key id costs what a wrong secret costs', () => {
  let t: TestApp;
  const codec = new ApiKeyCodec('dev');
  beforeAll(async () => {
    t = await createTestApp({ env: { TOKEN_FAILURE_LIMIT_PER_MINUTE: '100000' } });
  });
  afterAll(() => t.close());

  it('measures unknown-id and wrong-secret answers (medians printed)', async () => {
    const key = await t.createKey(await t.user());
    const unknownId = () => codec.format(randomUUID(), ApiKeyCodec.newSecret());
    const wrongSecret = () => codec.format(key.id, ApiKeyCodec.newSecret());
    const median = (samples: number[]) => [...samples].sort((a, b) => a - b)[Math.floor(samples.length / 2)];
    const micros = (from: bigint) => Number(process.hrtime.bigint() - from) / 1000;

    // The service call (one query and the comparison), alternating so that drift hits both alike.
    const service = t.get(KeyExchangeRules);
    const calls = { unknown: [] as number[], wrong: [] as number[] };
    for (let i = 0; i < 4000; i += 1) {
      const [kind, value] = i % 2 === 0 ? (['unknown', unknownId()] as const) : (['wrong', wrongSecret()] as const);
      const parsed = codec.parse(value)!;
      const started = process.hrtime.bigint();
      await expect(service.checkKey(parsed, Date.now())).rejects.toMatchObject({ status: 401 });
      if (i >= 400) calls[kind].push(micros(started));
    }

    // Whole answers over HTTP on one kept-alive connection.
    const server = t.app.getHttpServer() as Server;
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    const answers = { unknown: [] as number[], wrong: [] as number[] };
    for (let i = 0; i < 1200; i += 1) {
      const [kind, value] = i % 2 === 0 ? (['unknown', unknownId()] as const) : (['wrong', wrongSecret()] as const);
      const started = process.hrtime.bigint();
      const response = await fetch(`http://127.0.0.1:${port}/v1/token`, {
        method: 'POST',
        headers: { Authorization: `ApiKey ${value}` },
      });
      await response.arrayBuffer();
      expect(response.status).toBe(401);
      if (i >= 200) answers[kind].push(micros(started));
    }

    // The comparison itself.
    const hasher = new SecretHasher('a pepper of at least thirty-two characters');
    const stored = hasher.hash(ApiKeyCodec.newSecret());
    const presented = ApiKeyCodec.newSecret();
    const started = process.hrtime.bigint();
    for (let i = 0; i < 20000; i += 1) hasher.matches(presented, stored);
    const comparison = micros(started) / 20000;

    const line = (what: string, samples: { unknown: number[]; wrong: number[] }) =>
      `${what}: unknown id ${median(samples.unknown).toFixed(1)} µs, wrong secret ${median(samples.wrong).toFixed(1)} µs ` +
      `(difference ${(median(samples.wrong) - median(samples.unknown)).toFixed(1)} µs, ${samples.unknown.length} each)`;
    console.log(
      [
        `timing of step 4 on ${DATABASE_KIND}, medians:`,
        line('KeyExchangeRules.authenticate', calls),
        line('HTTP answer', answers),
        `one secret comparison (HMAC-SHA256 + timingSafeEqual): ${comparison.toFixed(2)} µs`,
      ].join('\n  '),
    );
  }, 60_000);
});
