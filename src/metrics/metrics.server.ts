import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Inject, Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import type { Registry } from 'prom-client';
import { ErrorCode, Messages, wireCode } from '../common/errors';
import { LIVE_BODY, PROBES, Probes } from '../common/probes';
import { InjectConfig } from '../config/config.module';
import type { AppConfiguration } from '../config/configuration';
import { Metrics } from './metrics';
import { processMetrics } from './process-metrics';

const METRICS_PATH = '/metrics';
const LIVENESS_PATH = '/healthz';
const READINESS_PATH = '/readyz';
const NO_CACHE = 'no-cache, no-store, must-revalidate';

function sendJson(res: ServerResponse, status: number, value: object, headers: Record<string, string> = {}): void {
  const body = JSON.stringify(value);
  res.writeHead(status, {
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': Buffer.byteLength(body),
    ...headers,
  });
  res.end(body);
}

function sendError(res: ServerResponse, status: number, code: ErrorCode, message: string): void {
  sendJson(res, status, { code: wireCode(code), message });
}

/**
 * On a listener of its own, never on the public port (docs/operations.md#metrics); it also answers the probes, as the
 * public port does (docs/deployment.md#probes).
 */
@Injectable()
export class MetricsServer implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('Metrics');
  private server: Server | undefined;

  constructor(
    @InjectConfig() private readonly config: AppConfiguration,
    private readonly metrics: Metrics,
    private readonly adapterHost: HttpAdapterHost,
    @Inject(PROBES) private readonly probes: Probes,
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
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      sendError(res, 404, ErrorCode.NOT_FOUND, Messages.routeNotFound);
      return;
    }
    if (path === LIVENESS_PATH) {
      sendJson(res, 200, LIVE_BODY, { 'Cache-Control': NO_CACHE });
      return;
    }
    if (path === READINESS_PATH) {
      const ready = await this.probes.readiness().catch(() => undefined);
      if (ready === undefined) sendError(res, 503, ErrorCode.UNAVAILABLE, Messages.unavailable);
      else sendJson(res, 200, ready, { 'Cache-Control': NO_CACHE });
      return;
    }
    if (path !== METRICS_PATH) {
      sendError(res, 404, ErrorCode.NOT_FOUND, Messages.routeNotFound);
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
      sendError(res, 500, ErrorCode.INTERNAL, Messages.internal);
    }
  }
}
