import { isPermission } from '../identity/roles';

/**
 * A scope a resource server declares (docs/mcp.md#register-the-mcp-server-with-its-scopes): its name in tokens, and
 * what the consent page says.
 */
export interface DeclaredScope {
  name: string;
  description: string;
}

export const MAX_SCOPE_NAME_LENGTH = 64;
export const MAX_SCOPE_DESCRIPTION_LENGTH = 200;
export const MAX_DECLARED_SCOPES = 32;

/** RFC 6749 section 3.3's scope-token: printable ASCII without space, `"` or `\`. */
const SCOPE_TOKEN = /^[\x21\x23-\x5b\x5d-\x7e]+$/;
/** Shown to people on the consent page: no control characters (line breaks included). */
const CONTROL = /[\p{Cc}\p{Cf}\u2028\u2029]/u;

/** Whether `value` is an OAuth `scope`: distinct scope-tokens separated by single spaces, at most 32. */
export function isScopeString(value: string): boolean {
  const names = value.split(' ');
  return (
    names.length <= MAX_DECLARED_SCOPES &&
    names.every((name) => name.length <= MAX_SCOPE_NAME_LENGTH && SCOPE_TOKEN.test(name)) &&
    new Set(names).size === names.length
  );
}

/** One `--scope NAME=DESCRIPTION`, or the problem with it (the name is up to the first `=`). */
export function parseScope(value: string): DeclaredScope | string {
  const at = value.indexOf('=');
  if (at < 0) return "--scope must be NAME=DESCRIPTION, e.g. 'tools:read=List and call read-only tools'";
  const declared = { name: value.slice(0, at), description: value.slice(at + 1).trim() };
  return scopeProblem(declared) ?? declared;
}

/** What is wrong with a declared scope, or null. */
export function scopeProblem({ name, description }: DeclaredScope): string | null {
  if (name.length === 0 || name.length > MAX_SCOPE_NAME_LENGTH || !SCOPE_TOKEN.test(name)) {
    return `--scope name must be 1 to ${MAX_SCOPE_NAME_LENGTH} printable ASCII characters without spaces, " or \\`;
  }
  // Gatehouse's own permissions are bounded by the role; a resource server's scopes are not (docs/adr/0049).
  if (isPermission(name)) return `--scope ${name} is one of Gatehouse's own permissions: choose a name of your own`;
  if (description.length === 0 || [...description].length > MAX_SCOPE_DESCRIPTION_LENGTH || CONTROL.test(description)) {
    return `--scope ${name}: the description must be 1 to ${MAX_SCOPE_DESCRIPTION_LENGTH} characters on one line`;
  }
  return null;
}

/** What is wrong with a whole declaration (each scope, their number, duplicates), or null. */
export function scopesProblem(scopes: readonly DeclaredScope[]): string | null {
  if (scopes.length > MAX_DECLARED_SCOPES) return `at most ${MAX_DECLARED_SCOPES} scopes per resource server`;
  const names = new Set<string>();
  for (const scope of scopes) {
    const problem = scopeProblem(scope);
    if (problem !== null) return problem;
    if (names.has(scope.name)) return `--scope ${scope.name} is given twice`;
    names.add(scope.name);
  }
  return null;
}
