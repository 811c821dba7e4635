/** The provider's sites (docs/integrations.md#validation): the only accepted values. */
const SITE_BASE_URLS = {
  'datadoghq.com': 'https://api.datadoghq.com',
  'us3.datadoghq.com': 'https://api.us3.datadoghq.com',
  'us5.datadoghq.com': 'https://api.us5.datadoghq.com',
  'datadoghq.eu': 'https://api.datadoghq.eu',
  'ap1.datadoghq.com': 'https://api.ap1.datadoghq.com',
  'ap2.datadoghq.com': 'https://api.ap2.datadoghq.com',
  'uk1.datadoghq.com': 'https://api.uk1.datadoghq.com',
  'ddog-gov.com': 'https://api.ddog-gov.com',
  'us2.ddog-gov.com': 'https://api.us2.ddog-gov.com',
} as const;

export type MonitoringSite = keyof typeof SITE_BASE_URLS;

export const MONITORING_SITES = Object.keys(SITE_BASE_URLS) as MonitoringSite[];

/** Lower-cased and trimmed, as docs/integrations.md#validation asks; anything else is left for the check to refuse. */
export function normalizeSite(value: unknown): unknown {
  return typeof value === 'string' ? value.trim().toLowerCase() : value;
}

export function isMonitoringSite(value: unknown): value is MonitoringSite {
  return typeof value === 'string' && Object.prototype.hasOwnProperty.call(SITE_BASE_URLS, value);
}

/** `override` (MONITORING_API_BASE_URL, refused in production) points every site at a fake provider. */
export function siteBaseUrl(site: MonitoringSite, override?: string): string {
  if (override !== undefined) return override;
  if (!isMonitoringSite(site)) throw new Error('not a monitoring site');
  return SITE_BASE_URLS[site];
}
