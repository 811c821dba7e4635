/**
 * RFC 9728 protected resource metadata: how a client that got a 401 from this resource server finds Gatehouse (the
 * Model Context Protocol's authorization asks every protected MCP server for it).
 */

/** What a resource server adds to its metadata (VerifierOptions.resourceMetadata). */
export interface ResourceMetadataOptions {
  /** The scopes it declared at Gatehouse (`gatehouse resource-server add --scope`), for `scopes_supported`. */
  scopes?: readonly string[];
  /** A name to show to people (`resource_name`). */
  resourceName?: string;
  /** A page about it for developers (`resource_documentation`). */
  resourceDocumentation?: string;
}

/** RFC 9728 section 2. */
export interface ProtectedResourceMetadata {
  resource: string;
  authorization_servers: string[];
  scopes_supported?: string[];
  bearer_methods_supported: ['header'];
  resource_name?: string;
  resource_documentation?: string;
}

/** The document, where it is served, and the URL a 401 names in `resource_metadata`. */
export interface ResourceMetadata {
  document: ProtectedResourceMetadata;
  url: string;
  /** The paths it is served at: the path-suffixed one (RFC 9728 section 3.1) and the root one. */
  paths: string[];
}

const WELL_KNOWN = '/.well-known/oauth-protected-resource';

/** The metadata of the resource whose identifier is `audience`, naming `issuer` as its authorization server. */
export function resourceMetadata(
  issuer: string,
  audience: string,
  options: ResourceMetadataOptions = {},
): ResourceMetadata {
  const document: ProtectedResourceMetadata = {
    resource: audience,
    authorization_servers: [issuer],
    bearer_methods_supported: ['header'],
  };
  if (options.scopes !== undefined && options.scopes.length > 0) document.scopes_supported = [...options.scopes];
  if (options.resourceName !== undefined) document.resource_name = options.resourceName;
  if (options.resourceDocumentation !== undefined) document.resource_documentation = options.resourceDocumentation;
  const url = new URL(audience);
  // Section 3.1: the well-known segment goes between the host and the resource's path; a trailing slash is dropped.
  const path = url.pathname.replace(/\/+$/, '');
  const suffixed = `${WELL_KNOWN}${path}`;
  return {
    document,
    url: `${url.origin}${suffixed}`,
    paths: suffixed === WELL_KNOWN ? [WELL_KNOWN] : [suffixed, WELL_KNOWN],
  };
}

/** The answer to a GET of one of `metadata.paths`: JSON any origin may read (browser-based clients fetch it). */
export function metadataResponse(metadata: ResourceMetadata): { headers: Record<string, string>; body: string } {
  return {
    headers: {
      'Content-Type': 'application/json',
      'Cache-Control': 'public, max-age=300',
      'Access-Control-Allow-Origin': '*',
    },
    body: JSON.stringify(metadata.document),
  };
}
