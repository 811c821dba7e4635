import { Injectable } from '@nestjs/common';
import { PassportStrategy } from '@nestjs/passport';
import { Strategy } from 'passport-http-bearer';
import type { Principal } from './principal';
import { PrincipalService } from './principal.service';

/**
 * passport-http-bearer would also read `access_token` from the query string and the body; the
 * guard only lets a request reach it with a well-formed `Authorization: Bearer` header.
 */
@Injectable()
export class BearerStrategy extends PassportStrategy(Strategy, 'bearer') {
  constructor(private readonly principals: PrincipalService) {
    super();
  }

  validate(token: string): Promise<Principal> {
    return this.principals.fromBearerToken(token);
  }
}
