/**
 * The checks of console single sign-on that need no database and no network (docs/console.md#single-sign-on): the ID
 * token's age and the browser-binding cookie (the person's e-mail address: federation/people.ts). Pure, so that each
 * rule is tested on its own.
 */

/** An ID token issued longer ago than this is refused: it was just issued, for this sign-in. */
export const MAX_ID_TOKEN_AGE_SECONDS = 300;

/** Whether `iat` (seconds) is older than {@link MAX_ID_TOKEN_AGE_SECONDS} at `now` (seconds). */
export function isStale(iat: number, now: number): boolean {
  return iat < now - MAX_ID_TOKEN_AGE_SECONDS;
}

/**
 * The cookie that binds a started sign-in, and the one-time link it ends with, to the browser that started it (login
 * CSRF, RFC 9700 section 4.7): the callback and POST /v1/console/sessions both require it.
 */
export const BINDING_COOKIE = 'gatehouse_sso';

/**
 * Where the binding cookie is sent: `<PUBLIC_BASE_URL>/v1/console`, which covers the callbacks and POST
 * /v1/console/sessions (and no page of the console); Secure when PUBLIC_BASE_URL is https.
 */
export function bindingCookieScope(publicBaseUrl: string): { path: string; secure: boolean } {
  const url = new URL(`${publicBaseUrl}/v1/console`);
  return { path: url.pathname, secure: url.protocol === 'https:' };
}

/** `Set-Cookie` of the binding: HttpOnly, SameSite=Lax (sent on the identity provider's redirect back), Secure on https. */
export function bindingCookie(
  value: string,
  options: { path: string; secure: boolean; maxAgeSeconds: number },
): string {
  return [
    `${BINDING_COOKIE}=${value}`,
    `Path=${options.path}`,
    `Max-Age=${options.maxAgeSeconds}`,
    'HttpOnly',
    'SameSite=Lax',
    ...(options.secure ? ['Secure'] : []),
  ].join('; ');
}

/** `Set-Cookie` that removes the binding once the callback has refused it, or its link was traded. */
export function clearedBindingCookie(options: { path: string; secure: boolean }): string {
  return bindingCookie('', { ...options, maxAgeSeconds: 0 });
}

/** The value of the cookie `name` in a `Cookie` header, or undefined (the first: browsers send the longest path first). */
export function cookieValue(header: string | undefined, name: string): string | undefined {
  for (const part of (header ?? '').split(';')) {
    const at = part.indexOf('=');
    if (at > 0 && part.slice(0, at).trim() === name) {
      const value = part.slice(at + 1).trim();
      return value === '' ? undefined : value;
    }
  }
  return undefined;
}
