import { isLoopbackHost } from '../config/reader';

export const MAX_AUDIENCE_LENGTH = 255;

/**
 * A resource server's audience: an absolute https:// URI, or http:// on a loopback host, without credentials or
 * fragment, at most 255 characters (docs/resource-servers.md). Null when it is not one; compared as written.
 */
export function audienceProblem(value: string): string | null {
  if (value.length === 0 || value.length > MAX_AUDIENCE_LENGTH) {
    return `--audience must be 1 to ${MAX_AUDIENCE_LENGTH} characters`;
  }
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return '--audience must be an absolute URI, e.g. https://api.example.com';
  }
  if (url.username !== '' || url.password !== '' || value.includes('#') || /\s/.test(value)) {
    return '--audience must have no credentials, fragment or spaces';
  }
  if (url.protocol === 'https:') return null;
  if (url.protocol === 'http:' && isLoopbackHost(url.hostname)) return null;
  return '--audience must be an https:// URI (http:// only on a loopback host such as localhost or 127.0.0.1)';
}
