import { addressKind } from '../../common/address-rules';

/**
 * Redirect URIs (docs/mcp.md#redirect-uris): which a client may have, whether it registered (RFC 7591, an organization's
 * admins) or published a metadata document, and which one an authorization request may name.
 */

export const MAX_REDIRECT_URI_LENGTH = 2000;

/** A value quoted in a refusal, cut short. */
function quoted(value: string): string {
  return JSON.stringify(value.length > 100 ? `${value.slice(0, 100)}…` : value);
}

/**
 * Private-use URI schemes of native MCP clients that are not a reverse domain name (RFC 8252 section 7.1 asks for one,
 * but these editors registered their names before): `cursor://anysphere.cursor-mcp/oauth/callback` and the like.
 */
export const NATIVE_CLIENT_SCHEMES: ReadonlySet<string> = new Set([
  'cursor',
  'vscode',
  'vscode-insiders',
  'vscodium',
  'windsurf',
]);
/** RFC 8252 section 7.1's reverse domain name: two or more dot-separated labels (`com.example.app`). */
const REVERSE_DOMAIN_SCHEME = /^[a-z][a-z0-9-]*(\.[a-z0-9-]+)+$/;
/** Schemes a browser runs, reads locally or hands to another protocol: never a redirect URI, whatever the client. */
const NEVER_SCHEMES = new Set(['javascript', 'data', 'file', 'blob', 'about', 'vbscript', 'filesystem', 'view-source']);

/** Whether the redirect URI's scheme is a native app's private-use one (RFC 8252 section 7.1). */
export function isPrivateUseScheme(url: URL): boolean {
  const scheme = url.protocol.slice(0, -1);
  return !NEVER_SCHEMES.has(scheme) && (REVERSE_DOMAIN_SCHEME.test(scheme) || NATIVE_CLIENT_SCHEMES.has(scheme));
}

/** Which redirect URIs a client may have: a public (native) client's may use a private-use scheme. */
export interface RedirectUriRules {
  privateUseSchemes: boolean;
}

const PUBLIC_CLIENT: RedirectUriRules = { privateUseSchemes: true };

/**
 * Why a redirect URI is refused, or null (docs/mcp.md#redirect-uris): absolute, no fragment or credentials; https, http
 * on a loopback host (RFC 8252 section 7.3), or for a public client a private-use scheme (section 7.1: a reverse
 * domain name, or one of NATIVE_CLIENT_SCHEMES). Never javascript:, data:, file: and the like.
 */
export function redirectUriProblem(uri: string, rules: RedirectUriRules = PUBLIC_CLIENT): string | null {
  if (uri.length > MAX_REDIRECT_URI_LENGTH)
    return `a redirect URI is longer than ${MAX_REDIRECT_URI_LENGTH} characters`;
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    return `the redirect URI ${quoted(uri)} is not an absolute URL`;
  }
  if (uri.includes('#')) return `the redirect URI ${quoted(uri)} has a fragment`;
  if (url.username !== '' || url.password !== '') return `the redirect URI ${quoted(uri)} has credentials`;
  if (url.protocol === 'https:') return null;
  if (url.protocol === 'http:' && isLoopback(url.hostname)) return null;
  if (rules.privateUseSchemes && isPrivateUseScheme(url)) return null;
  if (!rules.privateUseSchemes) {
    return `the redirect URI ${quoted(uri)} must be https, or http on a loopback host (127.0.0.1, [::1] or localhost)`;
  }
  return (
    `the redirect URI ${quoted(uri)} must be https, http on a loopback host (127.0.0.1, [::1] or localhost), or a ` +
    `native app's private-use scheme: a reverse domain name (com.example.app:/callback) or ` +
    `${[...NATIVE_CLIENT_SCHEMES].join(', ')}`
  );
}

const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);

/**
 * `redirectUri` is one of the client's exactly, or (RFC 8252 section 7.3) an http loopback one that differs only in its
 * port: native apps listen on a port the system picks.
 */
export function redirectUriAllowed(registered: readonly string[], redirectUri: string): boolean {
  if (registered.includes(redirectUri)) return true;
  let asked: URL;
  try {
    asked = new URL(redirectUri);
  } catch {
    return false;
  }
  if (asked.protocol !== 'http:' || !isLoopback(asked.hostname)) return false;
  return registered.some((uri) => {
    const url = new URL(uri);
    if (url.protocol !== 'http:' || !isLoopback(url.hostname)) return false;
    url.port = asked.port;
    return url.href === asked.href;
  });
}

/** 127.0.0.0/8, [::1] or localhost: the hosts of RFC 8252's loopback redirects. */
export function isLoopback(hostname: string): boolean {
  return LOOPBACK_HOSTS.has(hostname) || addressKind(hostname.replace(/^\[|\]$/g, '')) === 'loopback';
}
