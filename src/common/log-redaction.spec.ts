import { Writable } from 'node:stream';
import { createRootLogger } from './logging.module';
import { REDACTED, redactLogObject, redactSecrets, serializeError } from './log-redaction';

function capture(): { stream: Writable; lines: () => Array<Record<string, unknown>> } {
  let text = '';
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      text += chunk.toString();
      done();
    },
  });
  return {
    stream,
    lines: () =>
      text
        .split('\n')
        .filter((line) => line !== '')
        .map((line) => JSON.parse(line) as Record<string, unknown>),
  };
}

describe('log redaction', () => {
  it('replaces secret-named fields at any depth, whatever their case or spelling', () => {
    const input = {
      integration: { name: 'prod', config: { api_key: 'k1', application_key: 'k2', site: 'eu' } },
      headers: { Authorization: 'Bearer t', 'DD-API-KEY': 'k3', cookie: 'c', accept: 'json' },
      tokens: [{ access_token: 'a' }, { sessionToken: 's' }],
      apiKey: 'k4',
      keyId: 'not secret',
    };
    expect(redactSecrets(input)).toEqual({
      integration: { name: 'prod', config: { api_key: REDACTED, application_key: REDACTED, site: 'eu' } },
      headers: { Authorization: REDACTED, 'DD-API-KEY': REDACTED, cookie: REDACTED, accept: 'json' },
      tokens: [{ access_token: REDACTED }, { sessionToken: REDACTED }],
      apiKey: REDACTED,
      keyId: 'not secret',
    });
    // The logged object itself is not modified.
    expect(input.integration.config.api_key).toBe('k1');
  });

  it('serializes errors with their own fields, redacting bound statement values and headers', () => {
    const error = Object.assign(new Error('query failed'), {
      parameters: ['secret-value'],
      request: { headers: { 'dd-application-key': 'k' } },
    });
    expect(serializeError(error)).toMatchObject({
      type: 'Error',
      message: 'query failed',
      parameters: REDACTED,
      request: { headers: { 'dd-application-key': REDACTED } },
    });
  });

  it('leaves a log object without secrets as it is (the access log pays nothing)', () => {
    const object = { req: { headers: { authorization: 'x' } }, responseTime: 3, context: 'X' };
    expect(redactLogObject(object)).toBe(object);
  });

  it('applies to every line of the root logger and its children', () => {
    const { stream, lines } = capture();
    const logger = createRootLogger('debug', stream).child({ requestId: 'r1' });
    logger.warn({ config: { api_key: 'k' }, password: 'p' }, 'with secrets');
    logger.error({ err: Object.assign(new Error('boom'), { parameters: ['v'] }) }, 'failed');
    logger.error(Object.assign(new Error('bare'), { secret: 's' }));
    const [first, second, third] = lines();
    expect(first).toMatchObject({ level: 'warn', requestId: 'r1', config: { api_key: REDACTED }, password: REDACTED });
    expect(second.err).toMatchObject({ message: 'boom', parameters: REDACTED });
    expect(third.err).toMatchObject({ message: 'bare', secret: REDACTED });
    expect(JSON.stringify(lines())).not.toMatch(/"(k|p|v|s)"/);
  });
});
