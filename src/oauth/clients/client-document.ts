import { redirectUriProblem } from './redirect-uris';

/**
 * Client ID Metadata Documents (draft-ietf-oauth-client-id-metadata-document, the MCP 2025-11-25 default): what a
 * client_id URL may be and what its document must say (docs/mcp.md#clients).
 */

/** How Gatehouse knows a client: its metadata document's URL, a dynamic registration, or an organization's admins. */
export type ClientRegistration = 'document' | 'dynamic' | 'organization';

/** A client as the authorization endpoint and the consent page use it. */
export interface OAuthClient {
  clientId: string;
  /** Untrusted (but an organization's): the consent page shows `host`, or who registered it, beside it. */
  name: string;
  /** The client_id's host (a metadata document's), or null for a client registered here. */
  host: string | null;
  logoUri: string | null;
  redirectUris: readonly string[];
  registration: ClientRegistration;
  /** The organization whose members alone may use it (registration `organization`); else null. */
  organizationId: string | null;
}

/** Why a client_id or its document was refused, in words the person (or the client's developer) can act on. */
export class ClientRefused extends Error {}

const MAX_CLIENT_ID = 512;

/** A client_id that names a metadata document: https, a path, no credentials, fragment or dot segments. */
export function isDocumentUrl(clientId: string): boolean {
  return clientId.startsWith('https://');
}

export function documentUrlProblem(clientId: string): string | null {
  if (clientId.length > MAX_CLIENT_ID) return `client_id is longer than ${MAX_CLIENT_ID} characters`;
  let url: URL;
  try {
    url = new URL(clientId);
  } catch {
    return 'client_id is not a URL';
  }
  if (url.protocol !== 'https:') return 'a client_id URL must be https';
  if (url.username !== '' || url.password !== '' || url.hash !== '' || clientId.includes('#')) {
    return 'a client_id URL has no credentials or fragment';
  }
  if (url.pathname === '/' || /\/\.\.?(\/|$)/.test(clientId.slice(url.origin.length))) {
    return 'a client_id URL has a path without dot segments';
  }
  if (url.href !== clientId) return 'a client_id URL must be in its normal form';
  return null;
}

function stringOrNull(value: unknown): string | null {
  return typeof value === 'string' && value !== '' ? value : null;
}

/**
 * The document's client, or why not: its client_id must be the URL it came from, its redirect URIs those a public
 * client may have (redirect-uris.ts: https, loopback http, a native app's private-use scheme).
 */
export function clientFromDocument(clientId: string, document: unknown): OAuthClient {
  if (typeof document !== 'object' || document === null || Array.isArray(document)) {
    throw new ClientRefused('the client metadata document is not a JSON object');
  }
  const doc = document as Record<string, unknown>;
  if (doc.client_id !== clientId) {
    throw new ClientRefused('the client metadata document names another client_id than its URL');
  }
  const uris = doc.redirect_uris;
  if (!Array.isArray(uris) || uris.length === 0 || !uris.every((uri) => typeof uri === 'string')) {
    throw new ClientRefused('the client metadata document has no valid redirect_uris');
  }
  for (const uri of uris) {
    const problem = redirectUriProblem(uri);
    if (problem !== null) throw new ClientRefused(`the client metadata document's redirect_uris: ${problem}`);
  }
  const method = doc.token_endpoint_auth_method;
  if (method !== undefined && method !== 'none') {
    throw new ClientRefused('only public clients are supported: token_endpoint_auth_method must be none');
  }
  const host = new URL(clientId).host;
  return {
    clientId,
    name: (stringOrNull(doc.client_name) ?? host).slice(0, 255),
    host,
    logoUri: stringOrNull(doc.logo_uri),
    redirectUris: uris,
    registration: 'document',
    organizationId: null,
  };
}
