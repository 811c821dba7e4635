import type { AddressInfo } from 'node:net';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Express } from 'express';
import { ExpressPlatform } from './http-platform';

describe('ExpressPlatform', () => {
  it('serves requests whose request and response are Express objects before Express sees them', async () => {
    const platform = new ExpressPlatform();
    platform.initHttpServer({});
    const express = platform.getInstance<Express>();
    express.get('/ping', (req, res) => {
      res.json({ path: req.path });
    });
    const server = platform.getHttpServer() as Server;
    const seen: Array<[object | null, object | null]> = [];
    server.prependListener('request', (req: IncomingMessage, res: ServerResponse) => {
      seen.push([Object.getPrototypeOf(req) as object | null, Object.getPrototypeOf(res) as object | null]);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = server.address() as AddressInfo;
      const response = await fetch(`http://127.0.0.1:${port}/ping?x=1`);
      expect(response.status).toBe(200);
      expect(await response.json()).toEqual({ path: '/ping' });
      expect(seen).toHaveLength(1);
      expect(seen[0][0]).toBe(express.request);
      expect(seen[0][1]).toBe(express.response);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
