import { createHash, createPrivateKey, createPublicKey, JsonWebKey, KeyObject } from 'node:crypto';

/** The one algorithm we sign with and the only one verification accepts. */
export const JWT_ALGORITHM = 'ES256';

export interface VerificationKey {
  kid: string;
  key: KeyObject;
  jwk: JsonWebKey;
}

/** RFC 7638 thumbprint of an EC public key: a stable `kid` that needs no configuration. */
function thumbprint(jwk: JsonWebKey): string {
  const canonical = JSON.stringify({ crv: jwk.crv, kty: jwk.kty, x: jwk.x, y: jwk.y });
  return createHash('sha256').update(canonical).digest('base64url');
}

function verificationKey(publicKey: KeyObject): VerificationKey {
  if (publicKey.asymmetricKeyType !== 'ec' || publicKey.asymmetricKeyDetails?.namedCurve !== 'prime256v1') {
    throw new Error('JWT keys must be EC P-256 keys (ES256)');
  }
  const jwk = publicKey.export({ format: 'jwk' });
  return { kid: thumbprint(jwk), key: publicKey, jwk };
}

/**
 * Keys are parsed once into KeyObjects at start (a PEM handed to jsonwebtoken is re-parsed on
 * every call). The signing key's public half plus any previous public keys verify.
 */
export class SigningKeys {
  readonly signingKey: KeyObject;
  readonly signingKid: string;
  private readonly byKid = new Map<string, VerificationKey>();

  constructor(privateKeyPem: string, previousPublicKeyPems: string[] = []) {
    this.signingKey = createPrivateKey(privateKeyPem);
    const current = verificationKey(createPublicKey(this.signingKey));
    this.signingKid = current.kid;
    for (const candidate of [current, ...previousPublicKeyPems.map((pem) => verificationKey(createPublicKey(pem)))]) {
      this.byKid.set(candidate.kid, candidate);
    }
  }

  verificationKey(kid: string): KeyObject | undefined {
    return this.byKid.get(kid)?.key;
  }

  /** GET /.well-known/jwks.json */
  jwks(): { keys: Array<JsonWebKey & { kid: string; alg: string; use: string }> } {
    return {
      keys: [...this.byKid.values()].map(({ kid, jwk }) => ({
        kty: jwk.kty,
        crv: jwk.crv,
        x: jwk.x,
        y: jwk.y,
        kid,
        alg: JWT_ALGORITHM,
        use: 'sig',
      })),
    };
  }
}
