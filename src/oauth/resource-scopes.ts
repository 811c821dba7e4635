import type { ResourceServersService } from '../resource-servers/resource-servers.service';

/** A resource server as the consent page shows it: its name and the scopes it declares, with their descriptions. */
export interface ResourceDescription {
  audience: string;
  name: string;
  scopes: ReadonlyMap<string, string>;
}

/**
 * The one place the authorization endpoint reads a resource server and its declared scopes
 * (docs/mcp.md#register-the-mcp-server-with-its-scopes); null when no resource server has this audience.
 */
export async function describeResource(
  servers: ResourceServersService,
  audience: string,
): Promise<ResourceDescription | null> {
  const server = (await servers.list()).find((candidate) => candidate.audience === audience);
  if (server === undefined) return null;
  return {
    audience,
    name: server.name,
    scopes: new Map(server.scopes.map((scope) => [scope.name, scope.description])),
  };
}
