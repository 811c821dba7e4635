import { EventEmitter } from 'node:events';
import { Writable } from 'node:stream';
import type { Request, Response } from 'express';
import { pino } from 'pino';
import { requestLogger } from './request-logger';

/** One request through the middleware; `finish` decides how its response ends. */
function serve(
  finish: (res: Response & EventEmitter) => void,
  headers: Record<string, string> = {},
  url = '/v1/token?api_key=pasted-secret',
) {
  const lines: Array<Record<string, unknown>> = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(JSON.parse(chunk.toString('utf8')) as Record<string, unknown>);
      done();
    },
  });
  const logger = pino({ level: 'debug', base: undefined, timestamp: false }, sink);
  const sent = new Map<string, unknown>();
  const res = Object.assign(new EventEmitter(), {
    statusCode: 200,
    writableFinished: false,
    setHeader: (name: string, value: unknown) => sent.set(name.toLowerCase(), value),
  }) as unknown as Response & EventEmitter & { writableFinished: boolean };
  const req = {
    method: 'POST',
    url,
    originalUrl: url,
    ip: '10.0.0.7',
    headers,
  } as unknown as Request;
  let nextCalls = 0;
  requestLogger(logger)(req, res, () => (nextCalls += 1));
  finish(res);
  return { lines, req, requestId: sent.get('x-request-id'), nextCalls };
}

const done = (statusCode: number) => (res: Response & EventEmitter) => {
  Object.assign(res, { statusCode, writableFinished: true });
  res.emit('finish');
  res.emit('close');
};

describe('requestLogger', () => {
  it('gives the request its id and a logger bound to it, then writes one line when the response is done', () => {
    const { lines, req, requestId, nextCalls } = serve(done(201), { 'x-request-id': 'trace-7' });
    expect(nextCalls).toBe(1);
    expect(requestId).toBe('trace-7');
    expect(req.id).toBe('trace-7');
    req.log.info('inside');
    expect(lines).toEqual([
      {
        level: 30,
        requestId: 'trace-7',
        req: { method: 'POST', path: '/v1/token', ip: '10.0.0.7' },
        res: { statusCode: 201 },
        responseTime: expect.any(Number),
        msg: 'request completed',
      },
      { level: 30, requestId: 'trace-7', msg: 'inside' },
    ]);
  });

  it('logs a 5xx at error as "request failed", and a response cut short as "request aborted"', () => {
    const failed = serve(done(503)).lines;
    expect(failed).toEqual([expect.objectContaining({ level: 50, res: { statusCode: 503 }, msg: 'request failed' })]);
    const aborted = serve((res) => res.emit('close')).lines;
    expect(aborted).toEqual([expect.objectContaining({ level: 30, res: { statusCode: 200 }, msg: 'request aborted' })]);
  });

  it("logs the revocation feed's answered polls at debug, their refusals as any other answer", () => {
    const level = (url: string, statusCode: number) => serve(done(statusCode), {}, url).lines.map((line) => line.level);
    expect(level('/ssf/poll', 200)).toEqual([20]);
    expect(level('/ssf/poll/0b6f9a8e-6a8e-4c63-9c1e-2f3c4d5e6f70', 200)).toEqual([20]);
    expect(level('/ssf/poll', 401)).toEqual([30]);
    expect(level('/ssf/poll/x', 429)).toEqual([30]);
    expect(level('/ssf/stream', 200)).toEqual([30]);
    expect(level('/ssf/poll/a/b', 200)).toEqual([30]);
  });

  it('writes nothing before the response is done, and never the query string', () => {
    const { lines } = serve(() => undefined);
    expect(lines).toEqual([]);
    expect(JSON.stringify(serve(done(200)).lines)).not.toContain('pasted-secret');
  });
});
