import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { Logger } from 'nestjs-pino';
import { AppModule } from './app.module';
import { configureHttp } from './common/http-setup';
import { ExpressPlatform } from './common/http-platform';
import { exitGracefullyOnSignals, HttpConnections } from './common/shutdown.state';
import { APP_CONFIG } from './config/config.module';
import { AppConfiguration, ConfigurationError } from './config/configuration';

async function bootstrap(): Promise<void> {
  const app = await NestFactory.create<NestExpressApplication>(AppModule.forRoot(), new ExpressPlatform(), {
    bodyParser: false,
    bufferLogs: true,
  });
  // Nest's own messages and every Logger call go out as JSON lines through pino (docs/operations.md).
  app.useLogger(app.get(Logger));
  const config = app.get<AppConfiguration>(APP_CONFIG);
  configureHttp(app, config);
  // Known from the first connection on, so that shutdown can close each one without resetting it.
  const connections = new HttpConnections(app.getHttpServer());
  await app.listen(config.port, config.host);
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
