import { isLoopbackHost, type Reader } from '../reader';

/**
 * MONITORING_API_BASE_URL: tests and local trials send every provider call (with every tenant's keys) there, so it
 * must be this machine, and never in production (docs/integrations.md#sites). Checked on the URL as fetch parses it.
 */
export function parseMonitoringApiBaseUrl(r: Reader, production: boolean): string | undefined {
  const raw = r.string('MONITORING_API_BASE_URL');
  if (raw === undefined) return undefined;
  let url: URL | undefined;
  try {
    url = new URL(raw);
  } catch {
    url = undefined;
  }
  if (url === undefined || !/^https?:\/\/[^/?#]+\/?$/.test(raw) || !['http:', 'https:'].includes(url.protocol)) {
    r.problem('MONITORING_API_BASE_URL must be an http(s) origin such as http://127.0.0.1:4010');
    return undefined;
  }
  if (url.username !== '' || url.password !== '' || !isLoopbackHost(url.hostname)) {
    r.problem('MONITORING_API_BASE_URL must be on a loopback address (127.0.0.0/8, [::1] or localhost)');
  }
  if (production) {
    r.problem('MONITORING_API_BASE_URL is for tests and local runs; it is refused when NODE_ENV=production');
  }
  return url.origin;
}
