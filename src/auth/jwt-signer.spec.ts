import { createPublicKey, generateKeyPairSync } from 'node:crypto';
import jwt from 'jsonwebtoken';
import { JwtSigner } from './jwt-signer';

describe('JwtSigner', () => {
  const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const publicKey = createPublicKey(privateKey);
  const signer = new JwtSigner();
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

  it('signs with a 64-byte raw (r || s) signature, as JOSE requires, not DER', async () => {
    const signature = Buffer.from((await signer.sign(payload, privateKey, 'k')).split('.')[2], 'base64url');
    expect(signature).toHaveLength(64);
  });

  it('does not verify under another key', async () => {
    const other = generateKeyPairSync('ec', { namedCurve: 'P-256' }).publicKey;
    const token = await signer.sign(payload, privateKey, 'k');
    expect(() => jwt.verify(token, other, { algorithms: ['ES256'] })).toThrow('invalid signature');
  });
});
