import { createServer, IncomingMessage, ServerResponse } from 'node:http';
import type { NestApplicationOptions } from '@nestjs/common';
import { ExpressAdapter } from '@nestjs/platform-express';
import type { Express } from 'express';

type Initializer = (this: object, ...args: unknown[]) => void;

/** A constructor for `base`'s objects whose instances have `prototype` as their prototype. */
function constructing<T>(base: T, prototype: object): T {
  const initialize = base as unknown as Initializer;
  function Built(this: object, ...args: unknown[]): void {
    initialize.call(this, ...args);
  }
  Built.prototype = prototype;
  return Built as unknown as T;
}

/** Requests and responses are Express objects from the start (docs/adr/0013-express-platform.md). */
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
