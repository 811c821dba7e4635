import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Controller, Get, INestApplication, Req, Res } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import express, { type Express, type Request, type Response } from 'express';
import { ExpressPlatform } from './http-platform';

/** What a route saw of its request and response (Node's own APIs, and Express's on top). */
interface Seen {
  request: { isIncomingMessage: boolean; header: string | undefined; remoteAddress: string | undefined };
  response: { isServerResponse: boolean; socketIsTheRequests: boolean };
}

const seen: Seen[] = [];

@Controller()
class ProbeController {
  @Get('probe')
  probe(@Req() req: Request, @Res() res: Response): void {
    seen.push({
      request: {
        isIncomingMessage: req instanceof IncomingMessage,
        header: req.get('x-probe'),
        remoteAddress: req.socket.remoteAddress,
      },
      response: { isServerResponse: res instanceof ServerResponse, socketIsTheRequests: res.socket === req.socket },
    });
    res.setHeader('x-node-header', 'set through ServerResponse');
    res.status(200).json({ path: req.path, query: req.query });
  }
}

interface PrototypeCall {
  target: object;
  from: object | null;
  to: object | null;
}

/** Every `Object.setPrototypeOf` call while `run` is under way, with the object's prototype before it. */
async function recordPrototypeChanges(run: () => Promise<void>): Promise<PrototypeCall[]> {
  const calls: PrototypeCall[] = [];
  const original = Object.setPrototypeOf;
  const spy = jest.spyOn(Object, 'setPrototypeOf').mockImplementation((target: object, to: object | null) => {
    calls.push({ target, from: Object.getPrototypeOf(target) as object | null, to });
    return original(target, to) as object;
  });
  try {
    await run();
  } finally {
    spy.mockRestore();
  }
  return calls;
}

function urlOf(server: Server, path: string): string {
  const { port } = server.address() as AddressInfo;
  return `http://127.0.0.1:${port}${path}`;
}

describe('ExpressPlatform (docs/adr/0013-express-platform.md)', () => {
  describe('in a Nest application (as main.ts and the e2e tests build it)', () => {
    let app: INestApplication;
    let server: Server;
    let expressApp: Express;
    /** The request and response of each request, and their prototypes as node:http created them. */
    const created: Array<{ req: IncomingMessage; res: ServerResponse; reqProto: unknown; resProto: unknown }> = [];

    beforeAll(async () => {
      const moduleRef = await Test.createTestingModule({ controllers: [ProbeController] }).compile();
      const platform = new ExpressPlatform();
      app = moduleRef.createNestApplication(platform, { bodyParser: false });
      await app.listen(0, '127.0.0.1');
      server = app.getHttpServer() as Server;
      expressApp = platform.getInstance<Express>();
      // Runs before Express: the objects exactly as the server made them.
      server.prependListener('request', (req: IncomingMessage, res: ServerResponse) => {
        created.push({ req, res, reqProto: Object.getPrototypeOf(req), resProto: Object.getPrototypeOf(res) });
      });
    });

    afterAll(async () => {
      await app?.close();
    });

    beforeEach(() => {
      seen.length = 0;
      created.length = 0;
    });

    it('creates each request and response with Express prototypes before Express sees them', async () => {
      const response = await fetch(urlOf(server, '/probe?x=1'), { headers: { 'x-probe': 'yes' } });
      expect(response.status).toBe(200);
      expect(await response.json()).toEqual({ path: '/probe', query: { x: '1' } });
      expect(created).toHaveLength(1);
      expect(created[0].reqProto).toBe(expressApp.request);
      expect(created[0].resProto).toBe(expressApp.response);
    });

    it('keeps them a working IncomingMessage and ServerResponse (headers, socket)', async () => {
      const response = await fetch(urlOf(server, '/probe'), { headers: { 'x-probe': 'yes' } });
      expect(response.status).toBe(200);
      expect(response.headers.get('x-node-header')).toBe('set through ServerResponse');
      expect(response.headers.get('content-type')).toMatch(/^application\/json/);
      expect(seen).toEqual([
        {
          request: { isIncomingMessage: true, header: 'yes', remoteAddress: '127.0.0.1' },
          response: { isServerResponse: true, socketIsTheRequests: true },
        },
      ]);
    });

    it('changes no prototype of the request or the response while handling it', async () => {
      const calls = await recordPrototypeChanges(async () => {
        expect((await fetch(urlOf(server, '/probe'))).status).toBe(200);
      });
      expect(created).toHaveLength(1);
      const { req, res } = created[0];
      const swaps = calls.filter(({ target, from, to }) => (target === req || target === res) && from !== to);
      expect(swaps).toEqual([]);
    });
  });

  // The canary: what the platform works around is still there. When an Express upgrade stops it,
  // this fails and ExpressPlatform can go.
  it("canary: Express's app.handle still swaps the prototypes of a plain node:http request and response", async () => {
    const plain = express();
    plain.get('/ping', (_req, res) => {
      res.end('pong');
    });
    const server = createServer(plain);
    const created: Array<{ req: IncomingMessage; res: ServerResponse }> = [];
    server.prependListener('request', (req: IncomingMessage, res: ServerResponse) => {
      created.push({ req, res });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const calls = await recordPrototypeChanges(async () => {
        expect(await (await fetch(urlOf(server, '/ping'))).text()).toBe('pong');
      });
      expect(created).toHaveLength(1);
      const { req, res } = created[0];
      const swapped = (target: object, from: object, to: object): boolean =>
        calls.some((call) => call.target === target && call.from === from && call.to === to);
      const stillSwaps =
        swapped(req, IncomingMessage.prototype, plain.request) &&
        swapped(res, ServerResponse.prototype, plain.response);
      if (!stillSwaps) {
        throw new Error(
          'Express no longer swaps the prototypes of requests and responses in app.handle: ' +
            'ExpressPlatform (src/common/http-platform.ts) is no longer needed and can be deleted; ' +
            'see "When to delete this" in docs/adr/0013-express-platform.md.',
        );
      }
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
