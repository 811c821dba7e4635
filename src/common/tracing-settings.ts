import { ConfigurationError, Environment } from '../config/reader';

/** What the OTel variables ask for (docs/deployment.md#traces). */
export interface TracingSettings {
  exporter: 'otlp' | 'console';
  /** OTLP over HTTP only: protobuf (OTel's default) or JSON. */
  protocol: 'http/protobuf' | 'http/json';
}

/** The running SDK, seen by the access log and the shutdown (tracing-sdk.ts). */
export interface Tracing {
  /** The trace id of the request being served, for its log lines. */
  traceId(): string | undefined;
  /** Exports what is buffered; at shutdown. */
  shutdown(): Promise<void>;
}

const EXPORTERS = new Set(['otlp', 'console', 'none']);
const PROTOCOLS = new Set(['http/protobuf', 'http/json']);

function value(env: Environment, name: string): string | undefined {
  const raw = env[name]?.trim();
  return raw === undefined || raw === '' ? undefined : raw;
}

/**
 * Off unless configured: OTel's own default would export to localhost:4318 with nothing set, but a service that
 * nobody asked to trace pays nothing for it. On when OTEL_TRACES_EXPORTER names an exporter, or an OTLP endpoint is
 * set; OTEL_SDK_DISABLED=true and OTEL_TRACES_EXPORTER=none keep it off. The exporter reads the rest of OTel's
 * variables itself (endpoint, headers, timeout, OTEL_BSP_*, OTEL_TRACES_SAMPLER, OTEL_SERVICE_NAME, ...).
 */
export function tracingSettings(env: Environment): TracingSettings | undefined {
  if (value(env, 'OTEL_SDK_DISABLED')?.toLowerCase() === 'true') return undefined;
  const exporters = (value(env, 'OTEL_TRACES_EXPORTER') ?? '')
    .split(',')
    .map((name) => name.trim().toLowerCase())
    .filter((name) => name !== '');
  const problems: string[] = [];
  const unknown = exporters.filter((name) => !EXPORTERS.has(name));
  if (unknown.length > 0 || exporters.length > 1) {
    problems.push('OTEL_TRACES_EXPORTER must be one of otlp, console, none');
  }
  const protocol = (
    value(env, 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL') ??
    value(env, 'OTEL_EXPORTER_OTLP_PROTOCOL') ??
    'http/protobuf'
  ).toLowerCase();
  if (!PROTOCOLS.has(protocol)) {
    problems.push(
      'OTEL_EXPORTER_OTLP_PROTOCOL must be http/protobuf or http/json (OTLP over HTTP; grpc is not built in)',
    );
  }
  if (problems.length > 0) throw new ConfigurationError(problems);
  const endpoint = value(env, 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT') ?? value(env, 'OTEL_EXPORTER_OTLP_ENDPOINT');
  const exporter = exporters[0] ?? (endpoint !== undefined ? 'otlp' : 'none');
  if (exporter === 'none') return undefined;
  return { exporter: exporter as TracingSettings['exporter'], protocol: protocol as TracingSettings['protocol'] };
}
