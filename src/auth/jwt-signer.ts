import { sign as cryptoSign, KeyObject } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { JWT_ALGORITHM } from './signing-keys';

const encode = (value: object): string => Buffer.from(JSON.stringify(value)).toString('base64url');

/**
 * Compact JWS signing with ES256 (RFC 7515/7518) straight on node:crypto. jsonwebtoken (behind
 * @nestjs/jwt, which still verifies our tokens) signs through a DER signature that it converts to
 * the JOSE form in JavaScript, plus option validation on every call: 91 µs a token against 42 µs
 * for the signature itself on the 2-core machine, about a tenth of POST /v1/token. Signing is the
 * small half of JWT; verification, with its algorithm pinning and claim checks, stays with the
 * library (TokenService.verify), and the tests verify every token we sign with jsonwebtoken.
 *
 * The ECDSA signature itself runs on libuv's thread pool (crypto.sign with a callback): about
 * 22 µs of CPU a token that would otherwise block the event loop, against about 7 µs of event-loop
 * time to hand it over (measured on the 2-core machine; README "Performance").
 */
@Injectable()
export class JwtSigner {
  /** The encoded protected header, per kid: the same for every token signed with one key. */
  private readonly headers = new Map<string, string>();

  sign(payload: object, key: KeyObject, kid: string): Promise<string> {
    let header = this.headers.get(kid);
    if (header === undefined) {
      header = encode({ alg: JWT_ALGORITHM, typ: 'JWT', kid });
      this.headers.set(kid, header);
    }
    const signingInput = `${header}.${encode(payload)}`;
    return new Promise((resolve, reject) => {
      cryptoSign('sha256', Buffer.from(signingInput), { key, dsaEncoding: 'ieee-p1363' }, (error, signature) => {
        if (error !== null) reject(error);
        else resolve(`${signingInput}.${signature.toString('base64url')}`);
      });
    });
  }
}
