import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import type { Request } from 'express';
import { clientAddress } from '../common/client-address';
import { setCaller } from '../identity/access.decorators';
import { bodyCode } from './body-code';
import { ConsoleSignInService } from './console-sign-in.service';
import { AcceptInvitationDto } from './dto/console-session.dto';

/**
 * An invitation's scheme (POST /v1/console/invitations/accept): the `code` of its link, in the body, is the
 * credential, checked whole before it is used, so a refused body never uses up an invitation. The caller is the new
 * ConsoleSession (docs/api.md#post-v1consoleinvitationsaccept).
 */
@Injectable()
export class InvitationGuard implements CanActivate {
  /** A credential in a JSON body: no OpenAPI security scheme describes it (the body's schema does). */
  static readonly securityScheme = null;

  constructor(private readonly signIn: ConsoleSignInService) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const request = context.switchToHttp().getRequest<Request>();
    const code = await bodyCode(request, AcceptInvitationDto);
    const address = clientAddress(request);
    setCaller(request, await this.signIn.acceptInvitation(code, address, { id: request.id, ip: address }));
    return true;
  }
}
