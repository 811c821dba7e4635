import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import type { Request } from 'express';
import {
  clientCredentials,
  FORM_TYPE,
  FormParameters,
  formParameters,
  unauthenticatedClient,
} from '../common/client-credentials';
import { RESOURCE_SERVER_SCHEME } from '../common/openapi';
import { setCaller } from '../identity/access.decorators';
import { ResourceServersService } from './resource-servers.service';

/**
 * A registered resource server's client credentials (introspection, the revocation feed): HTTP Basic, or on a form
 * body `client_id` and `client_secret` (RFC 6749 section 2.3.1), by exactly one method. 401 with the Basic challenge
 * otherwise. The caller is an AuthenticatedResourceServer.
 */
@Injectable()
export class ResourceServerGuard implements CanActivate {
  static readonly securityScheme = RESOURCE_SERVER_SCHEME;

  constructor(private readonly resourceServers: ResourceServersService) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const request = context.switchToHttp().getRequest<Request>();
    // Only a form's fields are credentials: a JSON body's `client_secret` is not a client authentication method.
    const form: FormParameters = FORM_TYPE.test(request.headers['content-type'] ?? '') ? formParameters(request) : {};
    const { clientId, clientSecret } = clientCredentials(request, form);
    const server = await this.resourceServers.byCredentials(clientId, clientSecret);
    if (server === null)
      throw unauthenticatedClient(
        'resource_server_credentials_invalid',
        'unknown resource server or wrong client_secret',
      );
    setCaller(request, server);
    return true;
  }
}
