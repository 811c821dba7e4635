import 'reflect-metadata';
// First: with OTEL_* set, the instrumentations must see http, pg, ioredis and undici load (docs/deployment.md#traces).
import './common/tracing-start';
import type { AddressInfo } from 'node:net';
import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { Logger } from 'nestjs-pino';
import { AppModule } from './app.module';
import { configureHttp } from './common/http-setup';
import { ExpressPlatform } from './common/http-platform';
import { exitGracefullyOnSignals, HttpConnections, ShutdownState } from './common/shutdown.state';
import { APP_CONFIG } from './config/config.module';
import { AppConfiguration, ConfigurationError } from './config/configuration';
import { Metrics } from './metrics/metrics';

async function bootstrap(): Promise<void> {
  const app = await NestFactory.create<NestExpressApplication>(AppModule.forRoot(), new ExpressPlatform(), {
    bodyParser: false,
    bufferLogs: true,
  });
  // Nest's own messages and every Logger call go out as JSON lines through pino (docs/operations.md).
  const logger = app.get(Logger);
  app.useLogger(logger);
  const config = app.get<AppConfiguration>(APP_CONFIG);
  configureHttp(app, config);
  // Known from the first connection on, so that shutdown can close each one without resetting it.
  const connections = new HttpConnections(app.getHttpServer());
  const shutdown = app.get(ShutdownState);
  app.get(Metrics).watchHttp({
    get openConnections() {
      return connections.count;
    },
    get requestsInFlight() {
      return shutdown.inFlightCount;
    },
  });
  await app.listen(config.port, config.host);
  const { port } = app.getHttpServer().address() as AddressInfo;
  // Where it listens and where people reach it, which the CLI's sign-in links use (PUBLIC_BASE_URL).
  logger.log(
    `listening on ${config.host}:${port}; public URL ${config.console.publicBaseUrl}, console at ${config.console.publicBaseUrl}/console/`,
    'Gatehouse',
  );
  if (config.environmentUnset) {
    logger.warn(
      `NODE_ENV is not set: a local development run on ${config.host} only, with secrets generated into ${config.dataDir}/local-secrets.json unless configured; set NODE_ENV=production for a deployment`,
      'Gatehouse',
    );
  }
  exitGracefullyOnSignals(app, connections, {
    drainMs: config.shutdownDrainMs,
    timeoutMs: config.shutdownTimeoutMs,
  });
}

bootstrap().catch((error: unknown) => {
  if (error instanceof ConfigurationError) {
    process.stderr.write(`gatehouse: ${error.message}\n`);
  } else {
    process.stderr.write(`gatehouse: failed to start: ${error instanceof Error ? error.stack : String(error)}\n`);
  }
  process.exit(1);
});
