import type { ResourceServer } from './resource-server.entity';
import type { ResourceServerCredentials, ResourceServersService } from './resource-servers.service';
import type { DeclaredScope } from './scopes';

/** The `resource-server` commands of the admin CLI (docs/resource-servers.md#registering-a-resource-server). */
export interface ResourceServerView {
  id: string;
  name: string;
  audience: string;
  scopes: DeclaredScope[];
  created_at: string;
  secret_rotated_at: string;
}

export interface ResourceServerCredentialsView {
  resource_server: ResourceServerView;
  client_id: string;
  client_secret: string;
}

function view(server: ResourceServer): ResourceServerView {
  return {
    id: server.id,
    name: server.name,
    audience: server.audience,
    scopes: server.scopes.map(({ name, description }) => ({ name, description })),
    created_at: server.createdAt.toISOString(),
    secret_rotated_at: server.secretRotatedAt.toISOString(),
  };
}

function credentials(result: ResourceServerCredentials): ResourceServerCredentialsView {
  return {
    resource_server: view(result.resourceServer),
    client_id: result.clientId,
    client_secret: result.clientSecret,
  };
}

export async function addResourceServer(
  servers: ResourceServersService,
  options: { name: string; audience: string; scope: DeclaredScope[] },
): Promise<ResourceServerCredentialsView> {
  return credentials(await servers.register(options.name, options.audience, options.scope));
}

export async function setResourceServerScopes(
  servers: ResourceServersService,
  options: { audience: string; scope: DeclaredScope[] },
): Promise<{ resource_server: ResourceServerView }> {
  return { resource_server: view(await servers.setScopes(options.audience, options.scope)) };
}

export async function listResourceServers(
  servers: ResourceServersService,
): Promise<{ resource_servers: ResourceServerView[] }> {
  return { resource_servers: (await servers.list()).map(view) };
}

export async function removeResourceServer(
  servers: ResourceServersService,
  options: { audience: string },
): Promise<{ removed: ResourceServerView }> {
  return { removed: view(await servers.remove(options.audience)) };
}

export async function rotateResourceServerSecret(
  servers: ResourceServersService,
  options: { audience: string },
): Promise<ResourceServerCredentialsView> {
  return credentials(await servers.rotateSecret(options.audience));
}
