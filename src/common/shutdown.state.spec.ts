import { EventEmitter } from 'node:events';
import type { Socket } from 'node:net';
import type { Request, Response } from 'express';
import { ShutdownState } from './shutdown.state';

type FakeResponse = Response & EventEmitter & { sent: Map<string, unknown>; body?: string };

function response(): FakeResponse {
  const sent = new Map<string, unknown>();
  const res = Object.assign(new EventEmitter(), {
    sent,
    headersSent: false,
    statusCode: 200,
    body: undefined as string | undefined,
    setHeader: (name: string, value: unknown) => sent.set(name.toLowerCase(), value),
    status: (code: number) => Object.assign(res, { statusCode: code }),
    type: (type: string) => (sent.set('content-type', type), res),
    send: (body: string) => Object.assign(res, { body }),
  });
  return res as unknown as FakeResponse;
}

/** One request on `socket` through the gate: its response, and whether the gate let it through. */
function serve(
  state: ShutdownState,
  socket: Socket,
  path = '/v1/user-api-keys',
): { res: FakeResponse; passed: boolean } {
  const res = response();
  let passed = false;
  state.gate({ path, socket } as unknown as Request, res, () => (passed = true));
  return { res, passed };
}

describe('ShutdownState', () => {
  it('counts the responses in flight and knows the connections that carry them', () => {
    const state = new ShutdownState();
    const first = new EventEmitter() as Socket;
    const second = new EventEmitter() as Socket;
    const a = serve(state, first);
    const b = serve(state, second);
    expect([a.passed, b.passed]).toEqual([true, true]);
    expect(state.inFlightCount).toBe(2);
    expect(state.busyConnections()).toEqual(new Set([first, second]));

    a.res.emit('close');
    expect(state.inFlightCount).toBe(1);
    expect(state.busyConnections()).toEqual(new Set([second]));

    // The keep-alive connection's next request is in flight again.
    const c = serve(state, first);
    expect(state.busyConnections()).toEqual(new Set([first, second]));
    c.res.emit('close');
    b.res.emit('close');
    expect(state.inFlightCount).toBe(0);
    expect(state.busyConnections().size).toBe(0);
  });

  it('at the drain: Connection: close on what is in flight and not yet sent, 503 for new work, /healthz still served', () => {
    const state = new ShutdownState();
    const idle = new EventEmitter() as Socket;
    const busy = new EventEmitter() as Socket;
    const sending = new EventEmitter() as Socket;
    serve(state, idle).res.emit('close');
    const inFlight = serve(state, busy);
    const started = serve(state, sending);
    (started.res as { headersSent: boolean }).headersSent = true;

    state.begin();
    expect(state.isDraining).toBe(true);
    expect(inFlight.res.sent.get('connection')).toBe('close');
    expect(started.res.sent.has('connection')).toBe(false);

    const refused = serve(state, idle);
    expect(refused.passed).toBe(false);
    expect(refused.res.statusCode).toBe(503);
    expect(JSON.parse(refused.res.body!)).toEqual({
      code: 'UNAVAILABLE',
      message: 'service unavailable',
      reason: 'shutting_down',
    });
    expect(refused.res.sent.get('connection')).toBe('close');
    expect(state.inFlightCount).toBe(2);
    const probe = serve(state, idle, '/healthz');
    expect(probe.passed).toBe(true);
    expect(probe.res.sent.get('connection')).toBe('close');
  });

  it('a pipelining connection: the later response carries Connection: close, and it stays busy until both are answered', () => {
    const state = new ShutdownState();
    const socket = new EventEmitter() as Socket;
    const earlier = serve(state, socket);
    const later = serve(state, socket);
    state.begin();
    expect(later.res.sent.get('connection')).toBe('close');
    expect(earlier.res.sent.has('connection')).toBe(false);

    earlier.res.emit('close');
    expect(state.busyConnections()).toEqual(new Set([socket]));
    later.res.emit('close');
    expect(state.busyConnections().size).toBe(0);
    expect(state.inFlightCount).toBe(0);
  });

  it('forgets a connection once it closes', () => {
    const state = new ShutdownState();
    const socket = new EventEmitter() as Socket;
    const { res } = serve(state, socket);
    socket.emit('close');
    // A response whose connection went away is still counted until it closes itself.
    expect(state.inFlightCount).toBe(1);
    expect(state.busyConnections().size).toBe(0);
    res.emit('close');
    expect(state.inFlightCount).toBe(0);
  });
});
