import { loadConfiguration } from '../config/configuration';
import { CliFacts, environmentWarnings, serverToCheck } from './environment-warnings';
import type { ServerCheck } from './server-check';

/** The admin CLI's warnings (docs/operations.md#admin-cli): only what is likely wrong, each saying why and the fix. */
describe('admin CLI warnings', () => {
  const config = (env: Record<string, string> = {}) => loadConfiguration({ DATA_DIR: '/srv/gatehouse', ...env });
  const facts = (overrides: Partial<CliFacts> = {}): CliFacts => ({
    command: 'bootstrap',
    config: config(),
    hadOrganizations: false,
    generatedSecretsFile: undefined,
    check: undefined,
    ...overrides,
  });
  const TOKEN_AT_DEFAULT_PORT =
    'JWT_ISSUER and PUBLIC_BASE_URL are not set, so the session token printed above is for a server at http://localhost:3000 (PORT is not set either: the default, 3000)';

  describe('which server is asked', () => {
    const result = { session_token: 'token' };
    it('the assumed address, for a session token whose issuer it is, and for a link', () => {
      expect(serverToCheck('bootstrap', config(), 'kid', result)).toEqual({
        baseUrl: 'http://localhost:3000',
        issuer: 'http://localhost:3000',
        signingKid: 'kid',
        sessionToken: 'token',
      });
      expect(serverToCheck('session', config({ PORT: '3001' }), 'kid', result)?.baseUrl).toBe('http://localhost:3001');
      expect(serverToCheck('console-link', config({ JWT_ISSUER: 'https://id.example.com' }), 'kid', {})).toEqual({
        baseUrl: 'http://localhost:3000',
        issuer: 'https://id.example.com',
        signingKid: 'kid',
      });
    });

    it('none when the address is configured, for a token of a configured issuer, or for another command', () => {
      expect(serverToCheck('bootstrap', config({ PUBLIC_BASE_URL: 'https://g.example.com' }), 'kid', result)).toBe(
        undefined,
      );
      expect(serverToCheck('bootstrap', config({ JWT_ISSUER: 'https://id.example.com' }), 'kid', result)).toBe(
        undefined,
      );
      expect(serverToCheck('set-role', config(), 'kid', {})).toBe(undefined);
    });
  });

  it('an empty database alone (the first run of a new installation) is not a warning', () => {
    expect(environmentWarnings(facts())).toEqual([]);
    expect(environmentWarnings(facts({ check: { outcome: 'accepted' } }))).toEqual([]);
  });

  it('an empty database with secrets this run generated: both are said', () => {
    expect(environmentWarnings(facts({ generatedSecretsFile: '/srv/gatehouse/local-secrets.json' }))).toEqual([
      'the SQLite database /srv/gatehouse/gatehouse.sqlite had no organization before this command: a server already running uses another one unless it has the same DATA_DIR and DATABASE_URL as this command',
      'generated new local secrets in /srv/gatehouse/local-secrets.json: the server must run with the same DATA_DIR (or the same configured secrets), or the tokens this command prints get 401 there',
    ]);
  });

  it.each<[ServerCheck, string]>([
    [
      { outcome: 'unreachable' },
      `${TOKEN_AT_DEFAULT_PORT}, but no server answers there: a server at another address refuses the token (401 user not authenticated); run this command with the server's PORT (or its PUBLIC_BASE_URL or JWT_ISSUER)`,
    ],
    [
      { outcome: 'unexpected', detail: 'HTTP 404 at /.well-known/oauth-authorization-server' },
      `${TOKEN_AT_DEFAULT_PORT}, but the server there answered HTTP 404 at /.well-known/oauth-authorization-server: it may not be Gatehouse; run this command with the server's PORT (or its PUBLIC_BASE_URL or JWT_ISSUER)`,
    ],
    [
      { outcome: 'other-issuer', issuer: 'https://gatehouse.example.com' },
      `${TOKEN_AT_DEFAULT_PORT}, but the Gatehouse there has the issuer https://gatehouse.example.com: it refuses the token (401 user not authenticated); run this command with the server's JWT_ISSUER and PUBLIC_BASE_URL`,
    ],
    [
      { outcome: 'other-signing-key' },
      `${TOKEN_AT_DEFAULT_PORT}, but the Gatehouse there signs with another key (another DATA_DIR or JWT_PRIVATE_KEY): it refuses the token (401 user not authenticated); run this command with the server's DATA_DIR and DATABASE_URL`,
    ],
    [
      { outcome: 'other-database' },
      `${TOKEN_AT_DEFAULT_PORT}, but the Gatehouse there uses another database: it refuses the token (401 user not authenticated); run this command with the server's DATA_DIR and DATABASE_URL`,
    ],
  ])('a session token the server at the assumed address would refuse (%j): why, and the fix', (check, warning) => {
    expect(environmentWarnings(facts({ hadOrganizations: true, check }))).toEqual([warning]);
  });

  it('a link: where it points, and what to set', () => {
    expect(
      environmentWarnings(
        facts({
          command: 'console-link',
          hadOrganizations: true,
          config: config({ PORT: '4100' }),
          check: { outcome: 'unreachable' },
        }),
      ),
    ).toEqual([
      "PUBLIC_BASE_URL is not set, so the link printed above assumes the server at http://localhost:4100 (PORT=4100), but no server answers there; run this command with the server's PORT, or set PUBLIC_BASE_URL to the address browsers reach the server at",
    ]);
  });

  it('another signing key is not said twice when this run generated the secrets', () => {
    const warnings = environmentWarnings(
      facts({
        hadOrganizations: true,
        generatedSecretsFile: '/x/local-secrets.json',
        check: { outcome: 'other-signing-key' },
      }),
    );
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/^generated new local secrets/);
  });
});
