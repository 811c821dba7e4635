import { DynamicModule, Global, Module } from '@nestjs/common';
import { LoggerModule } from 'nestjs-pino';
import { DestinationStream, Logger, pino } from 'pino';
import { PinoPretty } from 'pino-pretty';
import { APP_CONFIG } from '../config/config.module';
import type { AppConfiguration } from '../config/configuration';
import { redactLogObject, serializeError } from './log-redaction';

export type LogLevel = AppConfiguration['logLevel'];

/** The application's pino logger; `requestLogger` derives the per-request loggers from it. */
export const ROOT_LOGGER = Symbol('ROOT_LOGGER');

export interface LoggingOptions {
  /** Default stdout (the server); the CLI passes stderr, tests a buffer. */
  destination?: DestinationStream;
}

export type LogFormat = 'json' | 'pretty';

/** Pretty only at a development terminal; JSON everywhere else (docs/operations.md#logs). */
export function logFormat(production: boolean, stdoutIsTerminal: boolean): LogFormat {
  return stdoutIsTerminal && !production ? 'pretty' : 'json';
}

/** The access line's fields (request-logger.ts) after its message, e.g. `GET /healthz 200 2ms`. */
function prettyMessage(log: Record<string, unknown>, messageKey: string): string {
  const context = typeof log.context === 'string' ? `[${log.context}] ` : '';
  const req = log.req as { method?: string; path?: string } | undefined;
  const res = log.res as { statusCode?: number } | undefined;
  const access =
    req?.method !== undefined
      ? ` ${req.method} ${req.path ?? ''} ${res?.statusCode ?? '-'}` +
        (typeof log.responseTime === 'number' ? ` ${log.responseTime}ms` : '')
      : '';
  const message = log[messageKey];
  return `${context}${typeof message === 'string' ? message : JSON.stringify(message ?? '')}${access}`;
}

/** In-process and synchronous like the JSON destination, from the same already-redacted log object. */
export function prettyStream(destination: number | NodeJS.WritableStream = 1): DestinationStream {
  return PinoPretty({
    destination,
    sync: true,
    translateTime: 'SYS:HH:MM:ss.l',
    ignore: 'pid,hostname,context,req,res,responseTime',
    messageFormat: prettyMessage,
    singleLine: true,
  });
}

export function createRootLogger(level: LogLevel, destination?: DestinationStream, format: LogFormat = 'json'): Logger {
  return pino(
    {
      level,
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }), log: redactLogObject },
      serializers: { err: serializeError },
    },
    destination ?? (format === 'pretty' ? prettyStream() : pino.destination({ fd: 1, sync: true })),
  );
}

/** One pino logger per app; nestjs-pino routes Nest's `Logger` through it (docs/operations.md#logs). */
@Global()
@Module({})
export class LoggingModule {
  static forRoot(options: LoggingOptions = {}): DynamicModule {
    const rootLogger = {
      provide: ROOT_LOGGER,
      useFactory: (config: AppConfiguration) =>
        createRootLogger(
          config.logLevel,
          options.destination,
          logFormat(config.production, process.stdout.isTTY === true),
        ),
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
