import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import type { Request } from 'express';
import { clientAddress } from '../common/client-address';
import { setCaller } from '../identity/access.decorators';
import { bodyCode } from './body-code';
import { ConsoleSignInService } from './console-sign-in.service';
import { CreateConsoleSessionDto } from './dto/console-session.dto';
import { BINDING_COOKIE, cookieValue } from './sso/sso-rules';

/**
 * The one-time sign-in link's scheme (POST /v1/console/sessions): the link's `code`, in the body, is the credential,
 * with the gatehouse_sso cookie for a link of single sign-on (the browser that started it). The body is checked whole
 * before the code is traded, so a refused body never uses up a link. The caller is the new ConsoleSession
 * (docs/api.md#post-v1consolesessions).
 */
@Injectable()
export class SignInLinkGuard implements CanActivate {
  /** A credential in a JSON body: no OpenAPI security scheme describes it (the body's schema does). */
  static readonly securityScheme = null;

  constructor(private readonly signIn: ConsoleSignInService) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const request = context.switchToHttp().getRequest<Request>();
    const code = await bodyCode(request, CreateConsoleSessionDto);
    const address = clientAddress(request);
    const binding = cookieValue(request.headers.cookie, BINDING_COOKIE);
    setCaller(request, await this.signIn.signIn(code, address, { id: request.id, ip: address }, binding));
    return true;
  }
}
