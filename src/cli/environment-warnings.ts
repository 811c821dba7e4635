import type { AppConfiguration } from '../config/configuration';
import type { ServerCheck, ServerExpectation } from './server-check';

/**
 * What makes the CLI's work unusable by the server when the two do not share their environment (a session token that
 * gets 401, a link to the wrong port), said on stderr after the result, never instead of it
 * (docs/operations.md#admin-cli). Only what is likely wrong: the correct first run of a new installation says nothing.
 */

/** The commands whose output the server must accept, and what they print. */
const PRINTS: Record<string, 'session token' | 'link'> = {
  bootstrap: 'session token',
  session: 'session token',
  'console-link': 'link',
};

/**
 * The server to ask when the command had to assume its address (no PUBLIC_BASE_URL: `http://localhost:<PORT>`), or
 * undefined. A session token is checked only when its issuer is that address too (no JWT_ISSUER): a configured issuer
 * says the server is elsewhere.
 */
export function serverToCheck(
  command: string,
  config: AppConfiguration,
  signingKid: string,
  result: object,
): ServerExpectation | undefined {
  const printed = PRINTS[command];
  if (printed === undefined || config.console.publicBaseUrlSet) return undefined;
  const baseUrl = config.console.publicBaseUrl;
  if (printed === 'link') return { baseUrl, issuer: config.jwt.issuer, signingKid };
  const sessionToken = (result as { session_token?: unknown }).session_token;
  if (config.jwt.issuer !== baseUrl || typeof sessionToken !== 'string') return undefined;
  return { baseUrl, issuer: config.jwt.issuer, signingKid, sessionToken };
}

export interface CliFacts {
  command: string;
  config: AppConfiguration;
  hadOrganizations: boolean;
  /** The local secrets file this run generated, if it did (a DATA_DIR no server has used yet). */
  generatedSecretsFile: string | undefined;
  /** The answer of the server at the assumed address, when the command had to assume it. */
  check: ServerCheck | undefined;
}

/** Why the server at the assumed address would not accept what was printed, and what to run instead. */
function checkWarning(facts: CliFacts, check: Exclude<ServerCheck, { outcome: 'accepted' }>): string | undefined {
  const { config } = facts;
  const printed = PRINTS[facts.command];
  const port = config.portSet ? `PORT=${config.port}` : `PORT is not set either: the default, ${config.port}`;
  const assumed =
    printed === 'link'
      ? `PUBLIC_BASE_URL is not set, so the link printed above assumes the server at ${config.console.publicBaseUrl} (${port})`
      : `JWT_ISSUER and PUBLIC_BASE_URL are not set, so the session token printed above is for a server at ${config.console.publicBaseUrl} (${port})`;
  const refused = printed === 'link' ? '' : ': it refuses the token (401 user not authenticated)';
  switch (check.outcome) {
    case 'unreachable':
      return printed === 'link'
        ? `${assumed}, but no server answers there; run this command with the server's PORT, or set PUBLIC_BASE_URL to the address browsers reach the server at`
        : `${assumed}, but no server answers there: a server at another address refuses the token (401 user not authenticated); run this command with the server's PORT (or its PUBLIC_BASE_URL or JWT_ISSUER)`;
    case 'unexpected':
      return `${assumed}, but the server there answered ${check.detail}: it may not be Gatehouse; run this command with the server's PORT (or its PUBLIC_BASE_URL${printed === 'link' ? '' : ' or JWT_ISSUER'})`;
    case 'other-issuer':
      return `${assumed}, but the Gatehouse there has the issuer ${check.issuer}${refused}; run this command with the server's JWT_ISSUER and PUBLIC_BASE_URL`;
    case 'other-signing-key':
      // The CLI made its own secrets: the warning about them says so already.
      if (facts.generatedSecretsFile !== undefined) return undefined;
      return `${assumed}, but the Gatehouse there signs with another key (another DATA_DIR or JWT_PRIVATE_KEY)${refused}; run this command with the server's DATA_DIR and DATABASE_URL`;
    case 'other-database':
      return `${assumed}, but the Gatehouse there uses another database${refused}; run this command with the server's DATA_DIR and DATABASE_URL`;
  }
}

export function environmentWarnings(facts: CliFacts): string[] {
  const { config } = facts;
  const warnings: string[] = [];
  // An empty database is the correct first run of a new installation; with secrets this run had to generate, it is a
  // DATA_DIR no server has used (or not the server's).
  if (!facts.hadOrganizations && facts.generatedSecretsFile !== undefined) {
    const database =
      config.database.type === 'sqlite' ? `the SQLite database ${config.database.path}` : 'the DATABASE_URL database';
    warnings.push(
      `${database} had no organization before this command: a server already running uses another one unless it has the same DATA_DIR and DATABASE_URL as this command`,
    );
  }
  if (facts.generatedSecretsFile !== undefined) {
    warnings.push(
      `generated new local secrets in ${facts.generatedSecretsFile}: the server must run with the same DATA_DIR (or the same configured secrets), or the tokens this command prints get 401 there`,
    );
  }
  if (facts.check !== undefined && facts.check.outcome !== 'accepted') {
    const warning = checkWarning(facts, facts.check);
    if (warning !== undefined) warnings.push(warning);
  }
  return warnings;
}
