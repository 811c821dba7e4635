import { createPublicKey, generateKeyPairSync } from 'node:crypto';
import { testBuildDirectory } from '../../test/support/build-directory';
import jwt from 'jsonwebtoken';
import { JwtSigner } from './jwt-signer';

describe('JwtSigner', () => {
  const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const publicKey = createPublicKey(privateKey);
  const signer = new JwtSigner(testBuildDirectory());
  afterAll(() => signer.onApplicationShutdown());
  const payload = { sub: 'u', iat: 1_800_000_000, exp: 4_000_000_000, iss: 'i', aud: 'a' };

  it('produces a compact ES256 JWS that jsonwebtoken verifies with the algorithm pinned', async () => {
    const token = await signer.sign(payload, privateKey, 'kid-1');
    expect(token.split('.')).toHaveLength(3);
    const verified = jwt.verify(token, publicKey, {
      algorithms: ['ES256'],
      issuer: 'i',
      audience: 'a',
      complete: true,
    });
    expect(verified.header).toEqual({ alg: 'ES256', typ: 'JWT', kid: 'kid-1' });
    expect(verified.payload).toEqual(payload);
  });

  it('puts the given typ in the header (at+jwt for access tokens, RFC 9068), which jsonwebtoken accepts', async () => {
    for (const typ of ['at+jwt', 'JWT'] as const) {
      const token = await signer.sign(payload, privateKey, 'kid-1', typ);
      const verified = jwt.verify(token, publicKey, { algorithms: ['ES256'], complete: true });
      expect(verified.header).toEqual({ alg: 'ES256', typ, kid: 'kid-1' });
      expect(verified.payload).toEqual(payload);
    }
  });

  it('signs with a 64-byte raw (r || s) signature, as JOSE requires, not DER', async () => {
    const signature = Buffer.from((await signer.sign(payload, privateKey, 'k')).split('.')[2], 'base64url');
    expect(signature).toHaveLength(64);
  });

  it('does not verify under another key', async () => {
    const other = generateKeyPairSync('ec', { namedCurve: 'P-256' }).publicKey;
    const token = await signer.sign(payload, privateKey, 'k');
    expect(() => jwt.verify(token, other, { algorithms: ['ES256'] })).toThrow('invalid signature');
  });

  it('signs every token of a batch with its own payload, across several messages', async () => {
    // 600 signatures asked for in one turn: three messages of at most 256 to the signing thread.
    const tokens = await Promise.all(
      Array.from({ length: 600 }, (_, index) => signer.sign({ ...payload, sub: `user-${index}` }, privateKey, 'k')),
    );
    tokens.forEach((token, index) => {
      const verified = jwt.verify(token, publicKey, { algorithms: ['ES256'] }) as { sub: string };
      expect(verified.sub).toBe(`user-${index}`);
    });
  });

  it('refuses a signature its key cannot make without failing the others of its turn', async () => {
    const ed25519 = generateKeyPairSync('ed25519').privateKey;
    const [good, bad] = await Promise.allSettled([
      signer.sign(payload, privateKey, 'k'),
      signer.sign(payload, ed25519, 'k'),
    ]);
    expect(good.status).toBe('fulfilled');
    expect(bad).toMatchObject({
      status: 'rejected',
      reason: expect.objectContaining({ message: expect.stringMatching(/^signing failed: /) }),
    });
  });

  it('refuses what a stopped thread had, and the next signature starts a new thread', async () => {
    const own = new JwtSigner(testBuildDirectory());
    await own.sign(payload, privateKey, 'k');
    const pending = Array.from({ length: 1000 }, () => own.sign(payload, privateKey, 'k'));
    await new Promise((resolve) => setImmediate(resolve)); // the batch has gone to the thread
    await own.onApplicationShutdown();
    const outcomes = await Promise.allSettled(pending);
    const refused = outcomes.filter((outcome) => outcome.status === 'rejected');
    expect(refused.length).toBeGreaterThan(0);
    expect(refused[0].reason).toEqual(new Error('the signing thread stopped (exit code 1)'));

    const token = await own.sign(payload, privateKey, 'k');
    expect(jwt.verify(token, publicKey, { algorithms: ['ES256'] })).toEqual(payload);
    await own.onApplicationShutdown();
  });
});
