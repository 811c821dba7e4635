import type { KeyObject } from 'node:crypto';
import { isIP } from 'node:net';

/** The variables configuration is read from: process.env (and .env), or a test's own object. */
export type Environment = Record<string, string | undefined>;

export class ConfigurationError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid configuration:\n  - ${problems.join('\n  - ')}`);
    this.name = 'ConfigurationError';
  }
}

/** Values people leave in templates: refused as secrets everywhere. */
export const PLACEHOLDER = /^(change-?me|changeme|secret|placeholder|xxx+|todo)$/i;

/** Reads variables and collects every problem, so that one start names them all. */
export class Reader {
  readonly problems: string[] = [];
  constructor(readonly env: Environment) {}

  string(name: string, fallback?: string): string | undefined {
    const raw = this.env[name];
    if (raw === undefined || raw.trim() === '') return fallback;
    return raw.trim();
  }

  int(name: string, fallback: number, min: number, max: number): number {
    const raw = this.string(name);
    if (raw === undefined) return fallback;
    if (!/^\d+$/.test(raw) || Number(raw) < min || Number(raw) > max) {
      this.problems.push(`${name} must be an integer from ${min} to ${max} (got "${raw}")`);
      return fallback;
    }
    return Number(raw);
  }

  oneOf<T extends string>(name: string, values: readonly T[], fallback: T): T {
    const raw = this.string(name);
    if (raw === undefined) return fallback;
    if (!(values as readonly string[]).includes(raw)) {
      this.problems.push(`${name} must be one of ${values.join(', ')} (got "${raw}")`);
      return fallback;
    }
    return raw as T;
  }

  problem(message: string): void {
    this.problems.push(message);
  }
}

/** PEM values may arrive with literal "\n" sequences when set on one line. */
export function pem(value: string | undefined): string | undefined {
  return value?.replace(/\\n/g, '\n');
}

/** Whether the key parses and is an EC P-256 key, the only kind ES256 signs with. */
export function isP256(parse: () => KeyObject): boolean {
  try {
    const key = parse();
    return key.asymmetricKeyType === 'ec' && key.asymmetricKeyDetails?.namedCurve === 'prime256v1';
  } catch {
    return false;
  }
}

/** 127.0.0.0/8 and ::1 as the URL parser writes them (it normalises 127.1, 0x7f.0.0.1, [0:0::1] etc.). */
export function isLoopbackHost(hostname: string): boolean {
  if (hostname === 'localhost' || hostname === '[::1]') return true;
  return isIP(hostname) === 4 && hostname.startsWith('127.');
}
