import { Injectable } from '@nestjs/common';
import { ClientRefused, isDocumentUrl, OAuthClient } from './client-document';
import { ClientDocuments } from './client-documents';

/** The clients the authorization endpoint knows: a client_id URL names its metadata document (docs/mcp.md#clients). */
@Injectable()
export class OAuthClients {
  constructor(private readonly documents: ClientDocuments) {}

  async client(clientId: string): Promise<OAuthClient> {
    if (isDocumentUrl(clientId)) return this.documents.client(clientId);
    throw new ClientRefused('client_id is neither an https URL of a client metadata document nor a registered client');
  }
}
