import { DynamicModule, Global, Module } from '@nestjs/common';
import { LoggerModule } from 'nestjs-pino';
import { DestinationStream, Logger, pino } from 'pino';
import { APP_CONFIG } from '../config/config.module';
import type { AppConfiguration } from '../config/configuration';
import { redactLogObject, serializeError } from './log-redaction';

export type LogLevel = AppConfiguration['logLevel'];

/** The application's pino logger; `requestLogger` derives the per-request loggers from it. */
export const ROOT_LOGGER = Symbol('ROOT_LOGGER');

export interface LoggingOptions {
  /** Where the JSON lines go: stdout when absent (the server); the CLI passes stderr, tests a buffer. */
  destination?: DestinationStream;
  /** Overrides LOG_LEVEL (the CLI stays quiet unless LOG_LEVEL is set). */
  level?: LogLevel;
}

export function createRootLogger(level: LogLevel, destination?: DestinationStream): Logger {
  return pino(
    {
      level,
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }), log: redactLogObject },
      serializers: { err: serializeError },
    },
    destination ?? pino.destination({ fd: 1, sync: true }),
  );
}

/**
 * Structured JSON logs (docs/operations.md): one pino logger per application, and nestjs-pino so
 * that Nest's `Logger` (framework messages, our services) writes through it, bound to the current
 * request's id. The HTTP middleware is ours (request-logger.ts, mounted by configureHttp ahead of the
 * body parser), hence `useExisting`: nestjs-pino only binds `req.log` to the request's async context.
 */
@Global()
@Module({})
export class LoggingModule {
  static forRoot(options: LoggingOptions = {}): DynamicModule {
    const rootLogger = {
      provide: ROOT_LOGGER,
      useFactory: (config: AppConfiguration) => createRootLogger(options.level ?? config.logLevel, options.destination),
      inject: [APP_CONFIG],
    };
    return {
      module: LoggingModule,
      imports: [
        LoggerModule.forRootAsync({
          inject: [ROOT_LOGGER],
          useFactory: (logger: Logger) => ({ pinoHttp: { logger }, useExisting: true }),
        }),
      ],
      providers: [rootLogger],
      exports: [rootLogger],
    };
  }
}
