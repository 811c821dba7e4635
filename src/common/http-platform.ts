import { createServer, IncomingMessage, ServerResponse } from 'node:http';
import type { NestApplicationOptions } from '@nestjs/common';
import { ExpressAdapter } from '@nestjs/platform-express';
import type { Express } from 'express';

type Initializer = (this: object, ...args: unknown[]) => void;

/**
 * A constructor for `base`'s objects whose instances have `prototype` as their prototype. Node's
 * IncomingMessage and ServerResponse are plain constructor functions, called here on the new
 * object. (Reflect.construct with another new.target would do the same, but V8 then derives a new
 * hidden class for every object: the very cost this file removes.)
 */
function constructing<T>(base: T, prototype: object): T {
  const initialize = base as unknown as Initializer;
  function Built(this: object, ...args: unknown[]): void {
    initialize.call(this, ...args);
  }
  Built.prototype = prototype;
  return Built as unknown as T;
}

/**
 * Nest's Express platform, with one change: the HTTP server makes each request and response an
 * Express request and response from the start. Express 5 (`app.handle`) otherwise swaps the
 * prototype of both objects of every request (`Object.setPrototypeOf`), and V8 pays for each swap:
 * new hidden classes, deoptimised property access, and objects that end up in the old generation.
 * Express then finds the prototype already in place, which is no change. Measured: GET /healthz
 * 5,300-5,900 -> 10,300-10,700 requests/s. Why, what it relies on, and when to delete it:
 * docs/adr/0013-express-platform.md (the canary in http-platform.spec.ts fails when Express stops
 * swapping). The HTTPS server and `forceCloseConnections` (neither used here) keep Nest's own server.
 */
export class ExpressPlatform extends ExpressAdapter {
  override initHttpServer(options: NestApplicationOptions): void {
    super.initHttpServer(options);
    if (options.httpsOptions !== undefined || options.forceCloseConnections === true) return;
    const express = this.getInstance<Express>();
    this.setHttpServer(
      createServer(
        {
          IncomingMessage: constructing(IncomingMessage, express.request),
          ServerResponse: constructing(ServerResponse, express.response),
        },
        express,
      ),
    );
  }
}
