import { AppError } from '../common/errors';
import { checkWebhookUrl, WebhookMessages } from './webhook-url';

function refusal(url: string, production: boolean): string | undefined {
  try {
    checkWebhookUrl(url, production);
    return undefined;
  } catch (error) {
    expect(error).toBeInstanceOf(AppError);
    return (error as AppError).message;
  }
}

describe('webhook URL rules', () => {
  it('accepts https to a host name or a public address, and drops a fragment', () => {
    expect(checkWebhookUrl('https://hooks.example.com/in?x=1#frag', true)).toBe('https://hooks.example.com/in?x=1');
    expect(checkWebhookUrl('https://8.8.8.8:8443/h', true)).toBe('https://8.8.8.8:8443/h');
    expect(checkWebhookUrl('https://[2606:4700:4700::1111]/h', true)).toBe('https://[2606:4700:4700::1111]/h');
  });

  it('refuses what is not an absolute http(s) URL of at most 2048 characters', () => {
    for (const url of ['', 'hooks.example.com', '/relative', 'ftp://example.com/', 'javascript:alert(1)']) {
      expect(refusal(url, false)).toBe(WebhookMessages.urlInvalid);
    }
    expect(refusal(`https://example.com/${'a'.repeat(2048)}`, false)).toBe(WebhookMessages.urlInvalid);
  });

  it('refuses credentials in the URL', () => {
    expect(refusal('https://user:pass@example.com/', true)).toBe(WebhookMessages.urlCredentials);
  });

  it('refuses http in production, and outside production except to loopback', () => {
    expect(refusal('http://example.com/', true)).toBe(WebhookMessages.urlNotHttps);
    expect(refusal('http://127.0.0.1:8080/', true)).toBe(WebhookMessages.urlNotHttps);
    expect(refusal('http://example.com/', false)).toBe(WebhookMessages.urlNotHttps);
    expect(checkWebhookUrl('http://127.0.0.1:8080/hook', false)).toBe('http://127.0.0.1:8080/hook');
    expect(checkWebhookUrl('http://localhost:8080/hook', false)).toBe('http://localhost:8080/hook');
    expect(checkWebhookUrl('http://[::1]:8080/hook', false)).toBe('http://[::1]:8080/hook');
  });

  it('refuses private, loopback, link-local, multicast and reserved addresses in production, however written', () => {
    for (const url of [
      'https://10.0.0.1/',
      'https://127.0.0.1/',
      'https://127.1/',
      'https://0x7f000001/',
      'https://2130706433/',
      'https://localhost/',
      'https://a.localhost/',
      'https://169.254.169.254/latest/meta-data',
      'https://0.0.0.0/',
      'https://[::1]/',
      'https://[::ffff:127.0.0.1]/',
      'https://[fe80::1]/',
      'https://[fd00::1]/',
      'https://224.0.0.1/',
    ]) {
      expect(refusal(url, true)).toBe(WebhookMessages.urlAddress);
    }
    // Outside production too, but for loopback.
    expect(refusal('https://192.168.0.1/', false)).toBe(WebhookMessages.urlAddress);
    expect(refusal('https://[::1]/', false)).toBeUndefined();
  });
});
