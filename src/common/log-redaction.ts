import { pino } from 'pino';

/** Secrets never reach the logs (docs/operations.md). */
export const REDACTED = '[REDACTED]';

const SECRET_NAME =
  /^(?:authorization|proxy-authorization|cookie|set-cookie|x-api-key|dd-api-key|dd-application-key|access_?token|session_?token|refresh_?token|opaque_?key|api_?key|application_?key|secret|client_?secret|pepper|password|private_?key(?:_?pem)?|encryption_?key|parameters)$/i;

/** Logged by their own serializers (request-logger.ts), which already choose what to show. */
const SERIALIZED_KEYS = new Set(['req', 'res', 'err']);

const MAX_DEPTH = 8;

export function isSecretName(name: string): boolean {
  return SECRET_NAME.test(name);
}

export function redactSecrets(value: unknown, depth = 0): unknown {
  if (value === null || typeof value !== 'object') return value;
  if (depth >= MAX_DEPTH) return '[Object]';
  if (value instanceof Error) return redactSecrets(pino.stdSerializers.err(value), depth);
  if (Array.isArray(value)) return value.map((item) => redactSecrets(item, depth + 1));
  if (Buffer.isBuffer(value) || value instanceof Date) return value;
  const copy: Record<string, unknown> = {};
  for (const [name, field] of Object.entries(value)) {
    copy[name] = isSecretName(name) ? REDACTED : redactSecrets(field, depth + 1);
  }
  return copy;
}

/** pino `formatters.log`; req/res/err have their own serializers. */
export function redactLogObject(object: Record<string, unknown>): Record<string, unknown> {
  let copy: Record<string, unknown> | undefined;
  for (const [name, field] of Object.entries(object)) {
    if (SERIALIZED_KEYS.has(name)) continue;
    const redacted = isSecretName(name) ? REDACTED : redactSecrets(field);
    if (redacted !== field) (copy ??= { ...object })[name] = redacted;
  }
  return copy ?? object;
}

/** Redacted too: a driver error carries bound values, an HTTP client error its request headers. */
export function serializeError(error: unknown): unknown {
  return redactSecrets(error instanceof Error ? pino.stdSerializers.err(error) : error);
}
