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
  private readonly signed = new Map<string, string>();

  constructor(
    private readonly tokens: TokenService,
    @InjectConfig() config: AppConfiguration,
  ) {
    this.issuer = config.jwt.issuer;
  }

  async sign(set: PendingSet, audience: string): Promise<string> {
    const known = this.signed.get(set.jti);
    if (known !== undefined) return known;
    const { keys } = this.tokens;
    const compact = await new SignJWT({
      sub_id: JSON.parse(set.subject) as object,
      events: { [set.eventType]: JSON.parse(set.payload) as object },
    })
      .setProtectedHeader({ alg: 'ES256', kid: keys.signingKid, typ: 'secevent+jwt' })
      .setIssuer(this.issuer)
      .setIssuedAt(Math.floor(set.occurredAt.getTime() / 1000))
      .setJti(set.jti)
      .setAudience(audience)
      .sign(keys.signingKey);
    if (this.signed.size >= SIGNED_CACHE_SIZE) this.signed.delete(this.signed.keys().next().value!);
    this.signed.set(set.jti, compact);
    return compact;
  }
}
