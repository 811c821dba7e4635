/** The bounds of console single sign-on (docs/console.md#single-sign-on); a provider, so that tests can shorten them. */
export interface SsoSettings {
  /** Each request to the identity provider: its discovery document, its token endpoint (3 s, as federation's). */
  httpTimeoutMs: number;
  /** How long a started sign-in may take at the identity provider before its callback is refused. */
  requestSeconds: number;
  /** Sign-ins one client network may start per minute (each stores a row). */
  startsPerMinute: number;
  /** The discovery document is fetched again when older than this; a failed refresh keeps the last one. */
  metadataMaxAgeMs: number;
}

export const SSO_SETTINGS = Symbol('SSO_SETTINGS');

export const DEFAULT_SSO_SETTINGS: SsoSettings = {
  httpTimeoutMs: 3000,
  requestSeconds: 600,
  startsPerMinute: 30,
  metadataMaxAgeMs: 60 * 60_000,
};
