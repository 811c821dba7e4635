import { ServerResponse } from 'node:http';
import { type AttributeValue, type Attributes, isSpanContextValid, trace } from '@opentelemetry/api';
import { OTLPTraceExporter as OtlpJsonExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as OtlpProtobufExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { HttpInstrumentation } from '@opentelemetry/instrumentation-http';
import { IORedisInstrumentation } from '@opentelemetry/instrumentation-ioredis';
import { PgInstrumentation } from '@opentelemetry/instrumentation-pg';
import { UndiciInstrumentation } from '@opentelemetry/instrumentation-undici';
import { NodeSDK } from '@opentelemetry/sdk-node';
import {
  BatchSpanProcessor,
  ConsoleSpanExporter,
  type Span,
  type SpanExporter,
  type SpanProcessor,
} from '@opentelemetry/sdk-trace';
import type { Request } from 'express';
import { REDACTED } from './log-redaction';
import { routeTemplate, UNMATCHED_ROUTE } from './request-route';
import type { Tracing, TracingSettings } from './tracing-settings';

/** Probes and scrapes, every few seconds from every prober: no span (docs/deployment.md#traces). */
const UNTRACED_PATHS = new Set(['/healthz', '/readyz', '/metrics']);

/** Attributes holding a URL or a path: kept without their query string (a secret pasted there) or user info. */
const URL_ATTRIBUTES = new Set(['http.url', 'http.target', 'url.full', 'url.original', 'http.client.url']);
const DROPPED_ATTRIBUTES = new Set(['url.query']);
/** A JWT or an API key value (api-keys/api-key-codec.ts), wherever it appears in a value. */
const SECRET_VALUE =
  /eyJ[A-Za-z0-9_-]*\.[A-Za-z0-9_-]*\.[A-Za-z0-9_-]*|[a-z0-9]{1,16}\.[0-9a-f]{32}\.[A-Za-z0-9_-]{43}/g;

function scrubValue(name: string, value: AttributeValue | undefined): AttributeValue | undefined {
  if (typeof value !== 'string') return value;
  let text = value;
  if (URL_ATTRIBUTES.has(name)) {
    const query = text.search(/[?#]/);
    if (query !== -1) text = text.slice(0, query);
    text = text.replace(/^([a-z][a-z0-9+.-]*:\/\/)[^/@]*@/i, '$1');
  }
  return text.replace(SECRET_VALUE, REDACTED);
}

function scrubAttributes(attributes: Attributes): void {
  for (const name of Object.keys(attributes)) {
    if (DROPPED_ATTRIBUTES.has(name)) delete attributes[name];
    else attributes[name] = scrubValue(name, attributes[name]);
  }
}

/**
 * Runs as each span ends, before it is exported: no query string, no user info, no token or key value in any
 * attribute or event (the instrumentations record URLs whole, and an exception's message may quote what it was given).
 */
class Scrubber implements SpanProcessor {
  onStart(): void {}
  onEnding(span: Span): void {
    scrubAttributes(span.attributes);
    for (const event of span.events) if (event.attributes !== undefined) scrubAttributes(event.attributes);
  }
  onEnd(): void {}
  forceFlush(): Promise<void> {
    return Promise.resolve();
  }
  shutdown(): Promise<void> {
    return Promise.resolve();
  }
}

function exporterFor(settings: TracingSettings): SpanExporter {
  if (settings.exporter === 'console') return new ConsoleSpanExporter();
  // Each reads OTEL_EXPORTER_OTLP_[TRACES_]ENDPOINT, _HEADERS, _TIMEOUT and _COMPRESSION itself.
  return settings.protocol === 'http/json' ? new OtlpJsonExporter() : new OtlpProtobufExporter();
}

function envCount(name: string): number | undefined {
  const raw = process.env[name];
  return raw !== undefined && /^\d+$/.test(raw.trim()) ? Number(raw) : undefined;
}

/** OTel's batch variables, as its own SDK reads them (OTEL_BSP_*). */
function batchProcessor(exporter: SpanExporter): BatchSpanProcessor {
  return new BatchSpanProcessor({
    exporter,
    maxQueueSize: envCount('OTEL_BSP_MAX_QUEUE_SIZE'),
    scheduledDelayMillis: envCount('OTEL_BSP_SCHEDULE_DELAY'),
    exportTimeoutMillis: envCount('OTEL_BSP_EXPORT_TIMEOUT'),
    maxExportBatchSize: envCount('OTEL_BSP_MAX_EXPORT_BATCH_SIZE'),
  });
}

/** service.name: OTEL_SERVICE_NAME or OTEL_RESOURCE_ATTRIBUTES when given, `gatehouse` otherwise. */
function defaultServiceName(env: NodeJS.ProcessEnv): string | undefined {
  const named =
    env.OTEL_SERVICE_NAME !== undefined || /(^|,)\s*service\.name\s*=/.test(env.OTEL_RESOURCE_ATTRIBUTES ?? '');
  return named ? undefined : 'gatehouse';
}

/** Starts the SDK: a span per request named by its route template, child spans for PostgreSQL, Redis and fetch. */
export function startSdk(settings: TracingSettings): Tracing {
  const sdk = new NodeSDK({
    serviceName: defaultServiceName(process.env),
    spanProcessors: [new Scrubber(), batchProcessor(exporterFor(settings))],
    // Traces only: metrics stay Prometheus' (docs/operations.md#metrics), logs stay on stdout.
    metricReaders: [],
    logRecordProcessors: [],
    instrumentations: [
      new HttpInstrumentation({
        ignoreIncomingRequestHook: (request) => UNTRACED_PATHS.has((request.url ?? '').split('?')[0]),
        applyCustomAttributesOnSpan: (span, request, response) => {
          if (!(response instanceof ServerResponse)) return;
          const route = routeTemplate(request as Request);
          if (route !== UNMATCHED_ROUTE) span.setAttribute('http.route', route);
          span.updateName(`${(request as Request).method} ${route}`);
        },
      }),
      // Outbound calls through fetch: identity providers, webhooks, the monitoring providers.
      new UndiciInstrumentation(),
      // Queries only inside a request or another traced operation: the background pollers would add a trace a second.
      new PgInstrumentation({ requireParentSpan: true }),
      // The command's name only, never its arguments (keys carry client addresses and key ids).
      new IORedisInstrumentation({ requireParentSpan: true, dbStatementSerializer: (command) => command }),
    ],
  });
  sdk.start();
  return {
    traceId: () => {
      const context = trace.getActiveSpan()?.spanContext();
      return context !== undefined && isSpanContextValid(context) ? context.traceId : undefined;
    },
    shutdown: () => sdk.shutdown(),
  };
}
