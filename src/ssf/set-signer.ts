import { webcrypto } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { SignJWT } from 'jose';
import { TokenService } from '../auth/token.service';
import { InjectConfig } from '../config/config.module';
import type { AppConfiguration } from '../config/configuration';
import type { PendingSet } from './ssf.repository';

/** Signed SETs kept in memory (about 1 KB each): a redelivery sends the very same SET. */
const SIGNED_CACHE_SIZE = 10_000;

/** Security Event Tokens (RFC 8417) signed with the JWKS key, `typ: secevent+jwt`, `aud` the stream's audience. */
@Injectable()
export class SetSigner {
  private readonly issuer: string;
  /** By jti, while signing too: the waiting polls of one stream that a wake-up answers together sign a SET once. */
  private readonly signed = new Map<string, Promise<string>>();
  /** jose turns a KeyObject into a WebCrypto key at every signature: done once. */
  private key: Promise<webcrypto.CryptoKey> | undefined;

  constructor(
    private readonly tokens: TokenService,
    @InjectConfig() config: AppConfiguration,
  ) {
    this.issuer = config.jwt.issuer;
  }

  sign(set: PendingSet, audience: string): Promise<string> {
    const known = this.signed.get(set.jti);
    if (known !== undefined) return known;
    const signing = this.signNew(set, audience);
    if (this.signed.size >= SIGNED_CACHE_SIZE) this.signed.delete(this.signed.keys().next().value!);
    this.signed.set(set.jti, signing);
    // A failure is not kept: the next poll signs again.
    signing.catch(() => this.signed.get(set.jti) === signing && this.signed.delete(set.jti));
    return signing;
  }

  private async signNew(set: PendingSet, audience: string): Promise<string> {
    const { keys } = this.tokens;
    this.key ??= webcrypto.subtle.importKey(
      'pkcs8',
      keys.signingKey.export({ format: 'der', type: 'pkcs8' }),
      { name: 'ECDSA', namedCurve: 'P-256' },
      false,
      ['sign'],
    );
    return new SignJWT({
      sub_id: JSON.parse(set.subject) as object,
      events: { [set.eventType]: JSON.parse(set.payload) as object },
    })
      .setProtectedHeader({ alg: 'ES256', kid: keys.signingKid, typ: 'secevent+jwt' })
      .setIssuer(this.issuer)
      .setIssuedAt(Math.floor(set.occurredAt.getTime() / 1000))
      .setJti(set.jti)
      .setAudience(audience)
      .sign(await this.key);
  }
}
