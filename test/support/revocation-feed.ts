import type { TestApp } from './test-app';

const basic = (id: string, secret: string): string => `Basic ${Buffer.from(`${id}:${secret}`).toString('base64')}`;

/** POST /ssf/poll as `stream`; `drain` acks the backlog so a test sees its own events (a getter: set in beforeAll). */
export function feedPoller(of: () => { app: TestApp; stream: { clientId: string; clientSecret: string } }) {
  const poll = (body: object) => {
    const { app, stream } = of();
    return app.http().post('/ssf/poll').set('Authorization', basic(stream.clientId, stream.clientSecret)).send(body);
  };
  const drain = async (): Promise<void> => {
    for (;;) {
      const { body } = await poll({ returnImmediately: true, maxEvents: 1000 }).expect(200);
      const jtis = Object.keys(body.sets);
      if (jtis.length === 0) return;
      await poll({ returnImmediately: true, ack: jtis }).expect(200);
    }
  };
  return { poll, drain };
}
