import type { IdentityService } from '../../identity/identity.service';
import { OAuthClientView } from './dto/organization-client.dto';
import type { RegisteredClientKind } from './registered-client.entity';
import type { RegisteredClients } from './registered-clients.service';

/**
 * The `oauth-client` commands of the admin CLI (docs/mcp.md#clients): the operator lists and removes any registered
 * client (the dynamic ones above all), and registers an organization's own. Never a secret but the new one, once.
 */
export type OAuthClientCliView = OAuthClientView & { organization_id: string | null };

function view(client: Parameters<typeof OAuthClientView.from>[0]): OAuthClientCliView {
  return { ...OAuthClientView.from(client), organization_id: client.organizationId };
}

export async function addOAuthClient(
  services: { identity: IdentityService; oauthClients: RegisteredClients },
  options: { org: string; name: string; redirectUri: string[]; confidential: boolean },
): Promise<{ oauth_client: OAuthClientCliView; client_secret: string | null }> {
  const organization = await services.identity.organizationByName(options.org);
  const { client, clientSecret } = await services.oauthClients.createForOrganization(
    { organizationId: organization.id, userId: null },
    { name: options.name, redirectUris: options.redirectUri, confidential: options.confidential },
  );
  return { oauth_client: view(client), client_secret: clientSecret };
}

export async function listOAuthClients(
  services: { identity: IdentityService; oauthClients: RegisteredClients },
  options: { org?: string; kind?: RegisteredClientKind },
): Promise<{ oauth_clients: OAuthClientCliView[] }> {
  if (options.org !== undefined) {
    const organization = await services.identity.organizationByName(options.org);
    return { oauth_clients: (await services.oauthClients.listForOrganization(organization.id)).map(view) };
  }
  return { oauth_clients: (await services.oauthClients.list(options.kind)).map(view) };
}

export async function removeOAuthClient(
  oauthClients: RegisteredClients,
  options: { id: string },
): Promise<{ removed: OAuthClientCliView }> {
  return { removed: view(await oauthClients.remove(options.id)) };
}
