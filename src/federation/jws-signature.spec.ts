import { constants, generateKeyPairSync, KeyObject, sign, verify, webcrypto } from 'node:crypto';
import { createLocalJWKSet, exportJWK, importJWK, SignJWT } from 'jose';
import { signatureVerifies } from './jws-signature';
import type { AllowedAlgorithm } from './subject-token-rules';

type CryptoKey = webcrypto.CryptoKey;

const ALGORITHMS: AllowedAlgorithm[] = ['RS256', 'PS256', 'ES256', 'EdDSA'];
const CLAIMS = {
  iss: 'https://idp.example.com',
  sub: 'ci-runner',
  aud: 'https://gatehouse.example',
  exp: 1_800_000_600,
};

/** An issuer's key pair of the type `alg` signs with. */
function keyPairFor(alg: AllowedAlgorithm): { privateKey: KeyObject; publicKey: KeyObject } {
  if (alg === 'ES256') return generateKeyPairSync('ec', { namedCurve: 'P-256' });
  if (alg === 'EdDSA') return generateKeyPairSync('ed25519');
  return generateKeyPairSync('rsa', { modulusLength: 2048 });
}

/** The public key as the server gets it: jose's key set selects the token's key by kid and imports it for `alg`. */
async function serverKey(publicKey: KeyObject, alg: string): Promise<CryptoKey> {
  const keys = createLocalJWKSet({ keys: [{ ...(await exportJWK(publicKey)), kid: 'k1' }] });
  return keys({ alg, kid: 'k1' });
}

/** jose's import of the public key for `alg`, whatever key set would have chosen. */
async function importedFor(publicKey: KeyObject, alg: string): Promise<CryptoKey> {
  return (await importJWK(await exportJWK(publicKey), alg)) as CryptoKey;
}

/** A JWS of jose's SignJWT (an independent signer): its signing input and signature. */
async function signedBy(privateKey: KeyObject, alg: AllowedAlgorithm, claims: object = CLAIMS) {
  const token = await new SignJWT({ ...claims }).setProtectedHeader({ alg, kid: 'k1' }).sign(privateKey);
  const [header, payload, signature] = token.split('.');
  return { signingInput: `${header}.${payload}`, signature };
}

/** What node:crypto alone says of the signature (RFC 7518 section 3 encodings): true where only our checks refuse. */
function nodeAccepts(digest: string | null, key: KeyObject | CryptoKey, input: string, signature: string, pss = false) {
  const keyObject = key instanceof KeyObject ? key : KeyObject.from(key);
  const options = pss
    ? { padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: constants.RSA_PSS_SALTLEN_DIGEST }
    : { dsaEncoding: 'ieee-p1363' as const };
  return verify(digest, Buffer.from(input), { key: keyObject, ...options }, Buffer.from(signature, 'base64url'));
}

describe('signatureVerifies', () => {
  describe.each(ALGORITHMS)('%s', (alg) => {
    const issuer = keyPairFor(alg);
    let token: { signingInput: string; signature: string };
    let key: CryptoKey;
    beforeAll(async () => {
      token = await signedBy(issuer.privateKey, alg);
      key = await serverKey(issuer.publicKey, alg);
    });

    it("verifies jose's JWS with the issuer's key, from the key set or imported for the algorithm", async () => {
      expect(signatureVerifies(alg, key, token.signingInput, token.signature)).toBe(true);
      const imported = await importedFor(issuer.publicKey, alg);
      expect(signatureVerifies(alg, imported, token.signingInput, token.signature)).toBe(true);
      // The key's KeyObject is kept per CryptoKey: a second token with the same key verifies as the first.
      const second = await signedBy(issuer.privateKey, alg, { ...CLAIMS, sub: 'deploy-job' });
      expect(signatureVerifies(alg, key, second.signingInput, second.signature)).toBe(true);
    });

    it('is false when one byte of the payload changed', () => {
      const [header, payload] = token.signingInput.split('.');
      const json = Buffer.from(payload, 'base64url').toString();
      const changed = Buffer.from(json.replace('"ci-runner"', '"ci-runnes"')).toString('base64url');
      expect(changed).not.toBe(payload);
      expect(signatureVerifies(alg, key, `${header}.${changed}`, token.signature)).toBe(false);
    });

    it("is false for another key's signature under the same kid", async () => {
      const forged = await signedBy(keyPairFor(alg).privateKey, alg);
      expect(signatureVerifies(alg, key, forged.signingInput, forged.signature)).toBe(false);
    });

    it.each([
      ['padding', (s: string) => `${s}=`],
      ['two padding characters', (s: string) => `${s}==`],
      ['the base64 alphabet, padded', (s: string) => Buffer.from(s, 'base64url').toString('base64')],
      ['a line break inside', (s: string) => `${s.slice(0, 8)}\n${s.slice(8)}`],
      ['a space inside', (s: string) => `${s.slice(0, 8)} ${s.slice(8)}`],
      ['a dot inside', (s: string) => `${s.slice(0, 8)}.${s.slice(8)}`],
    ])('is false for a signature with %s, which Buffer decodes to the same bytes', (_name, spoil) => {
      const spoiled = spoil(token.signature);
      expect(spoiled).not.toBe(token.signature);
      expect(Buffer.from(spoiled, 'base64url')).toEqual(Buffer.from(token.signature, 'base64url'));
      expect(signatureVerifies(alg, key, token.signingInput, spoiled)).toBe(false);
    });

    it('is false for an empty signature, and one of the wrong length, without throwing', () => {
      expect(signatureVerifies(alg, key, token.signingInput, '')).toBe(false);
      expect(signatureVerifies(alg, key, token.signingInput, 'AAAA')).toBe(false);
      expect(signatureVerifies(alg, key, token.signingInput, `${token.signature}AAAA`)).toBe(false);
      expect(signatureVerifies(alg, key, token.signingInput, token.signature.slice(0, -4))).toBe(false);
    });
  });

  describe('a key imported for another algorithm than the token names', () => {
    it('RS256 with the RSA key imported for PS256, and PS256 with it imported for RS256', async () => {
      const { privateKey, publicKey } = keyPairFor('RS256');
      const rs256 = await signedBy(privateKey, 'RS256');
      const ps256 = await signedBy(privateKey, 'PS256');
      const forPs256 = await importedFor(publicKey, 'PS256');
      const forRs256 = await importedFor(publicKey, 'RS256');
      expect(signatureVerifies('RS256', forPs256, rs256.signingInput, rs256.signature)).toBe(false);
      expect(signatureVerifies('PS256', forRs256, ps256.signingInput, ps256.signature)).toBe(false);
      // The same RSA key underneath: node:crypto would accept both, so the imported algorithm is what refuses them.
      expect(nodeAccepts('sha256', forPs256, rs256.signingInput, rs256.signature)).toBe(true);
      expect(nodeAccepts('sha256', forRs256, ps256.signingInput, ps256.signature, true)).toBe(true);
    });

    it('ES256 with the P-256 key imported for ECDH-ES (key agreement)', async () => {
      const { privateKey, publicKey } = keyPairFor('ES256');
      const token = await signedBy(privateKey, 'ES256');
      const forEcdh = await importedFor(publicKey, 'ECDH-ES');
      expect(forEcdh.algorithm.name).toBe('ECDH');
      expect(signatureVerifies('ES256', forEcdh, token.signingInput, token.signature)).toBe(false);
      expect(nodeAccepts('sha256', forEcdh, token.signingInput, token.signature)).toBe(true);
    });

    it('EdDSA with a P-256 key, ES256 with an Ed25519 key, RS256 with either', async () => {
      const ed = keyPairFor('EdDSA');
      const ec = keyPairFor('ES256');
      const edToken = await signedBy(ed.privateKey, 'EdDSA');
      const ecToken = await signedBy(ec.privateKey, 'ES256');
      const ecKey = await serverKey(ec.publicKey, 'ES256');
      const edKey = await serverKey(ed.publicKey, 'EdDSA');
      expect(signatureVerifies('EdDSA', ecKey, edToken.signingInput, edToken.signature)).toBe(false);
      expect(signatureVerifies('ES256', edKey, ecToken.signingInput, ecToken.signature)).toBe(false);
      expect(signatureVerifies('RS256', ecKey, ecToken.signingInput, ecToken.signature)).toBe(false);
      expect(signatureVerifies('RS256', edKey, edToken.signingInput, edToken.signature)).toBe(false);
    });
  });

  it("is false for ES256 with a P-384 key, though node:crypto accepts the key's SHA-256 signature", async () => {
    const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-384' });
    // jose imports a P-384 key for ES384 only (for ES256: `crv` does not match); Web Crypto keeps the curve.
    await expect(importedFor(publicKey, 'ES256')).rejects.toThrow('JWK "crv" does not match the requested algorithm');
    const key = await importedFor(publicKey, 'ES384');
    const { signingInput } = await signedBy(keyPairFor('ES256').privateKey, 'ES256');
    const signature = sign('sha256', Buffer.from(signingInput), { key: privateKey, dsaEncoding: 'ieee-p1363' });
    expect(nodeAccepts('sha256', key, signingInput, signature.toString('base64url'))).toBe(true);
    expect(signatureVerifies('ES256', key, signingInput, signature.toString('base64url'))).toBe(false);
  });

  it.each(['RS256', 'PS256'] as const)(
    'is false for %s with a 1,024-bit RSA key (jose will not sign with it; node:crypto does)',
    async (alg) => {
      const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 1024 });
      await expect(signedBy(privateKey, alg)).rejects.toThrow(`${alg} requires key modulusLength to be 2048 bits`);
      const key = await importedFor(publicKey, alg);
      expect(key.algorithm).toMatchObject({ modulusLength: 1024 });
      const { signingInput } = await signedBy(keyPairFor(alg).privateKey, alg);
      const pss = alg === 'PS256';
      const signature = sign('sha256', Buffer.from(signingInput), {
        key: privateKey,
        ...(pss ? { padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: 32 } : {}),
      }).toString('base64url');
      expect(nodeAccepts('sha256', key, signingInput, signature, pss)).toBe(true);
      expect(signatureVerifies(alg, key, signingInput, signature)).toBe(false);
    },
  );

  it('is false for an ES256 signature in DER (ASN.1) instead of the 64 bytes of IEEE P1363', async () => {
    const { privateKey, publicKey } = keyPairFor('ES256');
    const key = await serverKey(publicKey, 'ES256');
    const { signingInput, signature } = await signedBy(privateKey, 'ES256');
    expect(Buffer.from(signature, 'base64url')).toHaveLength(64);
    const der = sign('sha256', Buffer.from(signingInput), { key: privateKey, dsaEncoding: 'der' });
    expect(der[0]).toBe(0x30);
    expect(verify('sha256', Buffer.from(signingInput), { key: publicKey, dsaEncoding: 'der' }, der)).toBe(true);
    expect(signatureVerifies('ES256', key, signingInput, der.toString('base64url'))).toBe(false);
  });
});
