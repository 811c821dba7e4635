/** The challenge of a refused Basic authentication (RFC 7617). */
export const BASIC_CHALLENGE: Readonly<Record<string, string>> = { 'WWW-Authenticate': 'Basic realm="gatehouse"' };

/** `application/x-www-form-urlencoded` decoding of one Basic part (RFC 6749 section 2.3.1). */
function formDecode(part: string): string | null {
  // Ids and secrets of ours have neither: most requests skip decodeURIComponent and its try.
  if (!part.includes('%') && !part.includes('+')) return part;
  try {
    return decodeURIComponent(part.replace(/\+/g, ' '));
  } catch {
    return null;
  }
}

/**
 * HTTP Basic credentials (RFC 7617) with each part form-decoded as OAuth clients send them: null when the header is
 * not Basic or not well-formed.
 */
export function basicCredentials(header: string): { id: string; secret: string } | null {
  const match = /^Basic +([A-Za-z0-9+/]+=*) *$/i.exec(header);
  if (match === null) return null;
  const decoded = Buffer.from(match[1], 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon === -1) return null;
  const id = formDecode(decoded.slice(0, colon));
  const secret = formDecode(decoded.slice(colon + 1));
  return id === null || secret === null || id === '' || secret === '' ? null : { id, secret };
}
