import { constants, KeyObject, verify, VerifyKeyObjectInput, webcrypto } from 'node:crypto';
import type { AllowedAlgorithm } from './subject-token-rules';

/** RFC 7518 section 3.3 and RFC 8725 section 3.5: an RSA key shorter than this signs nothing we accept. */
const MIN_RSA_BITS = 2048;

/**
 * Per algorithm: the Web Crypto algorithm the issuer's key was imported for (jose imports a JWKS key for the token's
 * `alg`), the digest, and node:crypto's options for the signature's encoding (RFC 7518 section 3).
 */
const ALGORITHMS: Record<
  AllowedAlgorithm,
  { keyAlgorithm: string; curve?: string; digest: string | null; options: Omit<VerifyKeyObjectInput, 'key'> }
> = {
  RS256: { keyAlgorithm: 'RSASSA-PKCS1-v1_5', digest: 'sha256', options: { padding: constants.RSA_PKCS1_PADDING } },
  PS256: {
    keyAlgorithm: 'RSA-PSS',
    digest: 'sha256',
    options: { padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: constants.RSA_PSS_SALTLEN_DIGEST },
  },
  ES256: { keyAlgorithm: 'ECDSA', curve: 'P-256', digest: 'sha256', options: { dsaEncoding: 'ieee-p1363' } },
  EdDSA: { keyAlgorithm: 'Ed25519', digest: null, options: {} },
};

/**
 * RFC 7515 section 2: base64url without padding. Anything else is no JWS: Buffer's decoder would skip a stray character
 * of the signature, and a character past ASCII in the signing input would lose its high byte.
 */
const BASE64URL = /^[A-Za-z0-9_-]+$/;
const SIGNING_INPUT = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/;

/** The KeyObject of each key jose handed out: jose keeps its imported keys, so this is made once a key. */
const keyObjects = new WeakMap<webcrypto.CryptoKey, KeyObject>();

/**
 * Whether `signature` (base64url) is `alg`'s signature of `signingInput` (the JWS's `header.payload`) by `key`, the key
 * jose's key set selected for the token (docs/adr/0041-token-exchange-cost.md). node:crypto's one-shot verify
 * instead of jose's Web Crypto call: the same OpenSSL check without a thread-pool round trip per token (29 µs against
 * 50-80 µs a token, RS256). False for a key that is not of the algorithm (a key imported for another one, an RSA key
 * under 2,048 bits, another curve), and for a signature that is no signature at all.
 */
export function signatureVerifies(
  alg: AllowedAlgorithm,
  key: webcrypto.CryptoKey,
  signingInput: string,
  signature: string,
): boolean {
  if (!BASE64URL.test(signature) || !SIGNING_INPUT.test(signingInput)) return false;
  const algorithm = ALGORITHMS[alg];
  const imported = key.algorithm as { name: string; namedCurve?: string; modulusLength?: number };
  if (key.type !== 'public' || imported.name !== algorithm.keyAlgorithm) return false;
  if (algorithm.curve !== undefined && imported.namedCurve !== algorithm.curve) return false;
  if (imported.modulusLength !== undefined && imported.modulusLength < MIN_RSA_BITS) return false;
  let keyObject = keyObjects.get(key);
  if (keyObject === undefined) {
    keyObject = KeyObject.from(key);
    keyObjects.set(key, keyObject);
  }
  try {
    return verify(
      algorithm.digest,
      Buffer.from(signingInput, 'ascii'),
      Object.assign({ key: keyObject }, algorithm.options),
      Buffer.from(signature, 'base64url'),
    );
  } catch {
    return false;
  }
}
