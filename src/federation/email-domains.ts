const DOMAIN = /^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]([a-z0-9-]{0,61}[a-z0-9])?$/;

/** The e-mail domain as a people issuer keeps it (trimmed, lower case), or null when it is not a domain name. */
export function emailDomainOf(value: string): string | null {
  const domain = value.trim().toLowerCase();
  return DOMAIN.test(domain) ? domain : null;
}
