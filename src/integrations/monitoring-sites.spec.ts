import { isMonitoringSite, MONITORING_SITES, normalizeSite, siteBaseUrl } from './monitoring-sites';

describe('monitoring sites', () => {
  it('are exactly the nine sites of docs/integrations.md#validation', () => {
    expect(MONITORING_SITES).toEqual([
      'datadoghq.com',
      'us3.datadoghq.com',
      'us5.datadoghq.com',
      'datadoghq.eu',
      'ap1.datadoghq.com',
      'ap2.datadoghq.com',
      'uk1.datadoghq.com',
      'ddog-gov.com',
      'us2.ddog-gov.com',
    ]);
  });

  it.each(MONITORING_SITES)('%s calls https://api.<site>', (site) => {
    expect(siteBaseUrl(site)).toBe(`https://api.${site}`);
  });

  it('sends every site to the override when one is configured', () => {
    expect(siteBaseUrl('datadoghq.eu', 'http://127.0.0.1:4010')).toBe('http://127.0.0.1:4010');
  });

  it('lower-cases and trims before the check', () => {
    expect(normalizeSite('  DataDogHQ.EU\t')).toBe('datadoghq.eu');
    expect(isMonitoringSite(normalizeSite(' US3.datadoghq.com '))).toBe(true);
    expect(normalizeSite(42)).toBe(42);
  });

  it.each([
    'datadoghq.com.evil.com',
    'evil.com/datadoghq.com',
    'evil.datadoghq.com',
    'api.datadoghq.com',
    'https://api.datadoghq.com',
    'https://datadoghq.com',
    'datadoghq.com/',
    'datadoghq.com:443',
    'datadoghq.com@evil.com',
    'evil.com#datadoghq.com',
    'datadoghq.com?x=1',
    'datadoghq.cоm', // Cyrillic "о"
    'xn--datadoghq-xyz.com',
    'datadoghq',
    'us4.datadoghq.com',
    '127.0.0.1',
    'localhost',
    'datadoghq.com\u0000',
    'data doghq.com',
    '',
    'constructor',
    '__proto__',
    'hasOwnProperty',
  ])('refuses %j', (value) => {
    expect(isMonitoringSite(normalizeSite(value))).toBe(false);
  });

  it('never builds a URL from a value outside the table', () => {
    expect(() => siteBaseUrl('evil.com' as never)).toThrow();
  });
});
