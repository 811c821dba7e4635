import { Writable } from 'node:stream';
import { createRootLogger, logFormat, prettyStream } from './logging.module';

/** docs/operations.md#logs: which format the server's stdout gets, and what a pretty line shows. */
describe('logFormat', () => {
  it.each([
    { production: false, terminal: true, format: 'pretty' },
    { production: false, terminal: false, format: 'json' },
    { production: true, terminal: true, format: 'json' },
    { production: true, terminal: false, format: 'json' },
  ])('production $production, stdout a terminal $terminal: $format', ({ production, terminal, format }) => {
    expect(logFormat(production, terminal)).toBe(format);
  });
});

describe('pretty lines', () => {
  // ANSI colour codes, present only when the output supports colour.
  // eslint-disable-next-line no-control-regex
  const ANSI = /\u001b\[[0-9;]*m/g;

  function prettyLogger() {
    let text = '';
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        text += chunk.toString('utf8');
        done();
      },
    });
    const logger = createRootLogger('info', prettyStream(sink));
    return { logger, lines: () => text.replace(ANSI, '').split('\n').filter(Boolean) };
  }

  it('one line per event: time, level, [context], message, then the other fields', () => {
    const { logger, lines } = prettyLogger();
    logger.info({ context: 'Shutdown', inFlight: 2 }, 'stopped listening');
    expect(lines()).toEqual([
      expect.stringMatching(/^\[\d\d:\d\d:\d\d\.\d{3}\] INFO: \[Shutdown\] stopped listening \{"inFlight":2\}$/),
    ]);
  });

  it('an access line shows method, path, status and time instead of the req and res objects', () => {
    const { logger, lines } = prettyLogger();
    logger.info(
      {
        requestId: 'r-1',
        req: { method: 'GET', path: '/healthz', ip: '127.0.0.1' },
        res: { statusCode: 200 },
        responseTime: 3,
      },
      'request completed',
    );
    expect(lines()).toEqual([
      expect.stringMatching(/ INFO: request completed GET \/healthz 200 3ms \{"requestId":"r-1"\}$/),
    ]);
  });

  it('is made from the redacted object: no secret reaches the terminal either', () => {
    const { logger, lines } = prettyLogger();
    logger.warn({ api_key: 'dev.secret-value', nested: { authorization: 'Bearer abc' } }, 'careful');
    const [line] = lines();
    expect(line).toContain('WARN: careful');
    expect(line).toContain('[REDACTED]');
    expect(line).not.toContain('secret-value');
    expect(line).not.toContain('Bearer abc');
  });
});
