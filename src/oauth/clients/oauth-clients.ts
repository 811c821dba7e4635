import { Injectable } from '@nestjs/common';
import { isDocumentUrl, OAuthClient } from './client-document';
import { ClientDocuments } from './client-documents';
import { RegisteredClients } from './registered-clients.service';

/**
 * The clients the authorization endpoint knows (docs/mcp.md#clients): a client_id URL names its metadata document;
 * any other is a client registered here, dynamically or by an organization's admins.
 */
@Injectable()
export class OAuthClients {
  constructor(
    private readonly documents: ClientDocuments,
    private readonly registered: RegisteredClients,
  ) {}

  client(clientId: string): Promise<OAuthClient> {
    return isDocumentUrl(clientId) ? this.documents.client(clientId) : this.registered.client(clientId);
  }
}
