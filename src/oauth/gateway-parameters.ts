import { invalidArgument } from '../common/errors';
import { isPermission, Permission } from '../identity/roles';

/** What the gateway configured: the audience it protects and the permissions it requires. */
export interface GatewayParameters {
  audience?: string;
  scope?: string;
}

/** The parameter from which on the query string is the client's, not the gateway's (Envoy's path_prefix ends in it). */
const IGNORED = 'ignored';

function decodeComponent(text: string): string {
  if (!text.includes('%') && !text.includes('+')) return text;
  try {
    return decodeURIComponent(text.replaceAll('+', ' '));
  } catch {
    throw invalidArgument('forward_auth_parameters_invalid');
  }
}

/**
 * `audience` and `scope`, each at most once, from the query string up to the first `ignored` parameter: Envoy appends
 * the client's path and query to its path_prefix, which ends in `ignored=`, so nothing from there on is read. Nothing
 * else is read either (no forwarded header, no body): nothing the client sends can change what the gateway asked.
 */
export function gatewayParameters(url: string): GatewayParameters {
  const parameters: GatewayParameters = {};
  const query = url.indexOf('?');
  if (query === -1) return parameters;
  for (const pair of url.slice(query + 1).split('&')) {
    const equals = pair.indexOf('=');
    const name = decodeComponent(equals === -1 ? pair : pair.slice(0, equals));
    if (name === IGNORED) break;
    if (name !== 'audience' && name !== 'scope') continue;
    if (parameters[name] !== undefined) throw invalidArgument('forward_auth_parameters_invalid');
    parameters[name] = equals === -1 ? '' : decodeComponent(pair.slice(equals + 1));
  }
  return parameters;
}

/**
 * The required scopes: names separated by spaces or commas. A key's token needs permissions of the catalogue
 * (`requiredPermissions`); a grant's, the scopes its resource server declared.
 */
export function requiredScopes(value: string | undefined): string[] {
  if (value === undefined) return [];
  return value.split(/[\s,]+/).filter((name) => name !== '');
}

/** The required permissions: names of the catalogue; 400 for any other. */
export function requiredPermissions(names: readonly string[]): Permission[] {
  if (!names.every(isPermission)) throw invalidArgument('forward_auth_parameters_invalid');
  return names as Permission[];
}
