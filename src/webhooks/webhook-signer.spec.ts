import { Webhook } from 'standardwebhooks';
import { newWebhookSecret, redactSecrets, SECRET_PREFIX, signWebhook } from './webhook-signer';

/** The signer against the Standard Webhooks library (an independent implementation) and the specification's example. */
describe('webhook signer', () => {
  it('makes secrets of 24 random bytes behind whsec_', () => {
    const secret = newWebhookSecret();
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{32}$/);
    expect(Buffer.from(secret.slice(SECRET_PREFIX.length), 'base64')).toHaveLength(24);
    expect(newWebhookSecret()).not.toBe(secret);
  });

  it('signs as the Standard Webhooks library verifies', () => {
    const secret = newWebhookSecret();
    const body = JSON.stringify({ type: 'api_key.created', timestamp: new Date().toISOString(), data: { a: 'é' } });
    const headers = signWebhook(secret, 'msg_1', new Date(), body);
    expect(headers['webhook-id']).toBe('msg_1');
    expect(headers['webhook-timestamp']).toMatch(/^\d+$/);
    expect(new Webhook(secret).verify(body, { ...headers })).toEqual(JSON.parse(body));
  });

  it('gives the signature the library gives', () => {
    const secret = newWebhookSecret();
    const at = new Date(1_700_000_000_123);
    expect(signWebhook(secret, 'msg_2', at, '{"x":1}')['webhook-signature']).toBe(
      new Webhook(secret).sign('msg_2', at, '{"x":1}'),
    );
  });

  it("matches the specification's example", () => {
    // github.com/standard-webhooks/standard-webhooks, spec/standard-webhooks.md and its test vectors.
    const headers = signWebhook(
      'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
      'msg_p5jXN8AQM9LWM0D4loKWxJek',
      new Date(1614265330 * 1000),
      '{"test": 2432232314}',
    );
    expect(headers).toEqual({
      'webhook-id': 'msg_p5jXN8AQM9LWM0D4loKWxJek',
      'webhook-timestamp': '1614265330',
      'webhook-signature': 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=',
    });
  });

  it('is refused by the library when the body, id or timestamp changed, or with another secret', () => {
    const secret = newWebhookSecret();
    const headers = signWebhook(secret, 'msg_3', new Date(), '{"a":1}');
    const verify =
      (body: string, changed: object = {}, key = secret) =>
      () =>
        new Webhook(key).verify(body, { ...headers, ...changed });
    expect(verify('{"a":2}')).toThrow();
    expect(verify('{"a":1}', { 'webhook-id': 'msg_4' })).toThrow();
    expect(verify('{"a":1}', { 'webhook-timestamp': String(Number(headers['webhook-timestamp']) - 1) })).toThrow();
    expect(verify('{"a":1}', {}, newWebhookSecret())).toThrow();
  });

  it('refuses a secret without its prefix', () => {
    expect(() => signWebhook('MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', 'm', new Date(), '{}')).toThrow();
  });

  it('signs with each of several secrets, space-separated: the library accepts either, and refuses a third', () => {
    const [current, previous] = [newWebhookSecret(), newWebhookSecret()];
    const body = '{"type":"webhook.test"}';
    const headers = signWebhook([current, previous], 'msg_5', new Date(), body);
    const signatures = headers['webhook-signature'].split(' ');
    expect(signatures).toEqual([
      signWebhook(current, 'msg_5', new Date(Number(headers['webhook-timestamp']) * 1000), body)['webhook-signature'],
      signWebhook(previous, 'msg_5', new Date(Number(headers['webhook-timestamp']) * 1000), body)['webhook-signature'],
    ]);
    for (const secret of [current, previous]) {
      expect(new Webhook(secret).verify(body, { ...headers })).toEqual(JSON.parse(body));
    }
    expect(() => new Webhook(newWebhookSecret()).verify(body, { ...headers })).toThrow();
    expect(() => signWebhook([], 'msg_6', new Date(), body)).toThrow();
  });

  it('redacts a secret a receiver sends back, whole or as its base64 part', () => {
    const secret = newWebhookSecret();
    const key = secret.slice(SECRET_PREFIX.length);
    expect(redactSecrets(`echo ${secret} and ${key}.`, [secret])).toBe('echo [redacted] and [redacted].');
    expect(redactSecrets('nothing here', [secret])).toBe('nothing here');
  });
});
