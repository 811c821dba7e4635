import type { Reader } from '../reader';

/** OAuth clients registered with Gatehouse (docs/mcp.md#clients, docs/adr/0055-registered-oauth-clients.md). */
export interface OAuthClientSettings {
  /** POST /oauth/register (RFC 7591) answers, and dynamically registered clients work: off unless the operator says. */
  dynamicRegistration: boolean;
  /** A dynamically registered client unused for this many days is refused, then removed. */
  dynamicClientIdleDays: number;
  /** Registrations one client address (IPv6: its /64) may ask per hour; every request counts. */
  registrationsPerHour: number;
  /** Dynamically registered clients kept at most: past it, registration is refused until idle ones are removed. */
  dynamicClientsMax: number;
}

export function parseOAuthClients(r: Reader): OAuthClientSettings {
  return {
    dynamicRegistration: r.oneOf('OAUTH_DYNAMIC_REGISTRATION', ['off', 'on'] as const, 'off') === 'on',
    dynamicClientIdleDays: r.int('OAUTH_DYNAMIC_CLIENT_IDLE_DAYS', 30, 1, 3650),
    registrationsPerHour: r.int('OAUTH_REGISTRATIONS_PER_HOUR', 10, 1, 100000),
    dynamicClientsMax: r.int('OAUTH_DYNAMIC_CLIENTS_MAX', 10000, 1, 10000000),
  };
}
