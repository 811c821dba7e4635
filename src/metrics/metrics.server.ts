import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import type { Registry } from 'prom-client';
import { AppError, errorBody } from '../common/errors';
import { InjectConfig } from '../config/config.module';
import type { AppConfiguration } from '../config/configuration';
import { Metrics } from './metrics';
import { processMetrics } from './process-metrics';

const METRICS_PATH = '/metrics';

function sendError(res: ServerResponse, error: AppError): void {
  const body = JSON.stringify(errorBody(error));
  res.writeHead(error.status, {
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': Buffer.byteLength(body),
  });
  res.end(body);
}

/** On a listener of its own, never on the public port (docs/operations.md#metrics). */
@Injectable()
export class MetricsServer implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('Metrics');
  private server: Server | undefined;

  constructor(
    @InjectConfig() private readonly config: AppConfiguration,
    private readonly metrics: Metrics,
    private readonly adapterHost: HttpAdapterHost,
  ) {}

  /** Where it listens (METRICS_PORT=0 picks a free port), or undefined when it does not. */
  address(): AddressInfo | undefined {
    const address = this.server?.address();
    return address !== null && typeof address === 'object' ? address : undefined;
  }

  async onApplicationBootstrap(): Promise<void> {
    const { enabled, host, port } = this.config.metrics;
    if (!enabled || this.adapterHost.httpAdapter == null) return;
    const registries = [this.metrics.registry, processMetrics()];
    const server = createServer((req, res) => void this.answer(req, res, registries));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, () => {
        server.off('error', reject);
        resolve();
      });
    });
    server.on('error', (error) => this.logger.error({ err: error }, 'metrics listener failed'));
    this.server = server;
    this.logger.log({ host, port: this.address()?.port }, 'metrics listening');
  }

  async onApplicationShutdown(): Promise<void> {
    const server = this.server;
    if (server === undefined) return;
    this.server = undefined;
    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      // Scrapers keep their connections open; a scrape in flight at this point is not worth waiting for.
      server.closeAllConnections();
    });
  }

  private async answer(req: IncomingMessage, res: ServerResponse, registries: Registry[]): Promise<void> {
    const url = req.url ?? '';
    const query = url.indexOf('?');
    const path = query === -1 ? url : url.slice(0, query);
    if (path !== METRICS_PATH || (req.method !== 'GET' && req.method !== 'HEAD')) {
      sendError(res, new AppError('route_not_found'));
      return;
    }
    try {
      const texts = await Promise.all(registries.map((registry) => registry.metrics()));
      const body = texts.join('');
      res.writeHead(200, {
        'Content-Type': registries[0].contentType,
        'Content-Length': Buffer.byteLength(body),
        'Cache-Control': 'no-store',
      });
      res.end(req.method === 'HEAD' ? undefined : body);
    } catch (error) {
      this.logger.error({ err: error }, 'collecting metrics failed');
      sendError(res, new AppError('internal'));
    }
  }
}
