import { generateKeyPairSync, randomBytes } from 'node:crypto';
import {
  chmodSync,
  chownSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
  existsSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Worker } from 'node:worker_threads';
import { testWorkerFile } from '../../test/support/build-directory';
import { AppConfiguration, ConfigurationError, Environment, loadConfiguration } from './configuration';
import { LOCAL_SECRETS_FILE, resolveSecrets, Secrets } from './local-secrets';

const ecPem = (): string =>
  generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();

/** The problems loadConfiguration reports for `env` (none -> []). */
function problems(env: Environment): string[] {
  try {
    loadConfiguration(env);
    return [];
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigurationError);
    return (error as ConfigurationError).problems;
  }
}

const productionSecrets = (): Environment => ({
  API_KEY_PEPPER: randomBytes(32).toString('base64'),
  JWT_PRIVATE_KEY: ecPem(),
  INTEGRATIONS_ENCRYPTION_KEY: randomBytes(32).toString('base64'),
  // The issuer defaults to it, and must be https:// in production.
  PUBLIC_BASE_URL: 'https://gatehouse.example.com',
});

describe('loadConfiguration', () => {
  describe('defaults (an empty environment is a working local set-up)', () => {
    const config = loadConfiguration({});

    it('serves on 127.0.0.1:3000 as a local development run (NODE_ENV unset)', () => {
      expect(config).toMatchObject({
        production: false,
        environmentUnset: true,
        host: '127.0.0.1',
        port: 3000,
        logLevel: 'info',
      });
    });

    it('keeps its data in ./data with the embedded SQLite database', () => {
      expect(config.dataDir).toBe(resolve('./data'));
      expect(config.database).toEqual({ type: 'sqlite', path: resolve('./data/gatehouse.sqlite') });
    });

    it('has the HTTP defaults of docs/architecture.md', () => {
      expect(config.bodyLimitBytes).toBe(16384);
      expect(config.trustProxy).toBe(false);
    });

    it('has the API key and token defaults of docs/api.md', () => {
      expect(config.apiKeys).toEqual({
        environment: 'dev',
        pepper: undefined,
        lastUsedFlushMs: 1000,
        usageFlushMs: 10_000,
        maxActivePerUser: 100,
      });
      expect(config.jwt).toEqual({
        privateKeyPem: undefined,
        previousPublicKeyPems: [],
        issuer: 'http://localhost:3000',
        audience: 'gatehouse',
      });
    });

    it('limits validations of monitoring credentials (docs/integrations.md#limits)', () => {
      expect(config.integrations).toMatchObject({
        validationDeadlineMs: 15000,
        validationsPerMinute: 10,
        maxConcurrentValidations: 8,
      });
    });

    it('limits reports of exposed keys and answers them at a floor (docs/api.md#post-v1api-keysexposed)', () => {
      expect(config.rateLimit.exposedReportsPerHour).toBe(60);
      expect(config.exposedReportMinResponseMs).toBe(500);
    });

    it('has dynamic client registration off, idle clients kept 30 days, 10 registrations an hour, 10,000 clients (docs/mcp.md#clients)', () => {
      expect(config.oauthClients).toEqual({
        dynamicRegistration: false,
        dynamicClientIdleDays: 30,
        registrationsPerHour: 10,
        dynamicClientsMax: 10000,
      });
    });

    it('keeps audit events 400 days (docs/operations.md#retention)', () => {
      expect(config.audit).toEqual({ retentionDays: 400 });
    });

    it('leaves secrets unset (they are generated locally, see resolveSecrets)', () => {
      expect(config.integrations.encryptionKey).toBeUndefined();
      expect(config.redisUrl).toBeUndefined();
    });
  });

  describe('values', () => {
    it('says whether PORT was set, for the admin CLI warnings that name the port', () => {
      expect(loadConfiguration({}).portSet).toBe(false);
      expect(loadConfiguration({ PORT: '3000' })).toMatchObject({ port: 3000, portSet: true });
    });

    it("LOG_LEVEL's default is the caller's (the admin CLI: warn), a set LOG_LEVEL wins", () => {
      expect(loadConfiguration({}).logLevel).toBe('info');
      expect(loadConfiguration({}, { logLevel: 'warn' }).logLevel).toBe('warn');
      expect(loadConfiguration({ LOG_LEVEL: 'debug' }, { logLevel: 'warn' }).logLevel).toBe('debug');
    });

    it('reads AUDIT_RETENTION_DAYS', () => {
      expect(loadConfiguration({ AUDIT_RETENTION_DAYS: '30' }).audit.retentionDays).toBe(30);
    });

    it('reads a PostgreSQL URL with its schema and pool settings', () => {
      const config = loadConfiguration({
        DATABASE_URL: 'postgres://u@db:5432/gatehouse',
        DATABASE_SCHEMA: 'tenant_1',
        DATABASE_POOL_SIZE: '25',
      });
      expect(config.database).toMatchObject({
        type: 'postgres',
        url: 'postgres://u@db:5432/gatehouse',
        schema: 'tenant_1',
        poolSize: 25,
      });
    });

    it('reads sqlite: URLs, relative and absolute', () => {
      expect(loadConfiguration({ DATABASE_URL: 'sqlite:./x/db.sqlite' }).database).toEqual({
        type: 'sqlite',
        path: resolve('./x/db.sqlite'),
      });
      expect(loadConfiguration({ DATABASE_URL: 'sqlite:/tmp/a.sqlite' }).database).toEqual({
        type: 'sqlite',
        path: '/tmp/a.sqlite',
      });
      expect(loadConfiguration({ DATABASE_URL: 'sqlite:///tmp/b.sqlite' }).database).toEqual({
        type: 'sqlite',
        path: '/tmp/b.sqlite',
      });
    });

    it('has an absolute issuer URL: http://localhost:<PORT>, or PUBLIC_BASE_URL, or JWT_ISSUER as written', () => {
      expect(loadConfiguration({ PORT: '8080' }).jwt.issuer).toBe('http://localhost:8080');
      expect(loadConfiguration({ PUBLIC_BASE_URL: 'http://gh.local:81/id/' }).jwt.issuer).toBe('http://gh.local:81/id');
      expect(loadConfiguration({ JWT_ISSUER: 'http://127.0.0.1:9/' }).jwt.issuer).toBe('http://127.0.0.1:9/');
      for (const value of ['gatehouse', 'ftp://id.example', 'https://id.example/?a=1', 'https://u:p@id.example']) {
        expect(problems({ JWT_ISSUER: value })).toEqual([
          'JWT_ISSUER must be an absolute http(s) URL without query or fragment, e.g. https://gatehouse.example.com',
        ]);
      }
    });

    it('calls identity providers on no private network unless IDENTITY_PROVIDER_NETWORKS names it, and only private ones', () => {
      expect(loadConfiguration({}).identityProviderNetworks.allows('10.0.0.1')).toBe(false);
      const networks = loadConfiguration({
        IDENTITY_PROVIDER_NETWORKS: '10.20.0.0/16, fd00:1::/64',
      }).identityProviderNetworks;
      expect([networks.allows('10.20.1.1'), networks.allows('fd00:1::1'), networks.allows('10.21.1.1')]).toEqual([
        true,
        true,
        false,
      ]);
      expect(problems({ IDENTITY_PROVIDER_NETWORKS: '10.20.0.0/33' })).toEqual([
        'IDENTITY_PROVIDER_NETWORKS: 10.20.0.0/33 is not a CIDR (e.g. 10.20.0.0/16)',
      ]);
      for (const outside of [
        '0.0.0.0/0',
        '169.254.0.0/16',
        '127.0.0.0/8',
        '8.8.8.0/24',
        '10.0.0.0/7',
        '172.16.0.0/11',
      ]) {
        expect(problems({ IDENTITY_PROVIDER_NETWORKS: outside })).toEqual([
          `IDENTITY_PROVIDER_NETWORKS: ${outside} is not within a private range (10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16, 100.64.0.0/10, fc00::/7)`,
        ]);
      }
    });

    it('lets gateways cache an allowed forward-auth answer 1 s by default, 0 to 5 s', () => {
      expect(loadConfiguration({}).forwardAuthCacheSeconds).toBe(1);
      expect(loadConfiguration({ FORWARD_AUTH_CACHE_SECONDS: '0' }).forwardAuthCacheSeconds).toBe(0);
      expect(problems({ FORWARD_AUTH_CACHE_SECONDS: '6' })).toHaveLength(1);
    });

    it('reads the revocation feed settings: idle streams kept an hour, 16 waiting polls a stream', () => {
      expect(loadConfiguration({}).ssf).toEqual({
        pollWaitSeconds: 20,
        eventRetentionDays: 7,
        streamIdleSeconds: 3600,
        maxWaitingPolls: 16,
      });
      const set = loadConfiguration({ SSF_STREAM_IDLE_SECONDS: '60', SSF_MAX_WAITING_POLLS: '1' }).ssf;
      expect([set.streamIdleSeconds, set.maxWaitingPolls]).toEqual([60, 1]);
      expect(problems({ SSF_STREAM_IDLE_SECONDS: '59' })).toEqual([
        'SSF_STREAM_IDLE_SECONDS must be an integer from 60 to 604800 (got "59")',
      ]);
      expect(problems({ SSF_STREAM_IDLE_SECONDS: '604801' })).toHaveLength(1);
      expect(problems({ SSF_MAX_WAITING_POLLS: '0' })).toEqual([
        'SSF_MAX_WAITING_POLLS must be an integer from 1 to 10000 (got "0")',
      ]);
    });

    it('trims values and treats blank ones as unset', () => {
      const config = loadConfiguration({ PORT: ' 8080 ', API_KEY_ENV: '   ', JWT_ISSUER: ' https://id.example ' });
      expect(config.port).toBe(8080);
      expect(config.apiKeys.environment).toBe('dev');
      expect(config.jwt.issuer).toBe('https://id.example');
    });

    it.each([
      ['1', 1],
      ['250', 250],
      ['10000', 10000],
    ])('reads API_KEY_MAX_ACTIVE_PER_USER=%s', (raw, expected) => {
      expect(loadConfiguration({ API_KEY_MAX_ACTIVE_PER_USER: raw }).apiKeys.maxActivePerUser).toBe(expected);
    });

    it('reads the dynamic client registration settings', () => {
      const config = loadConfiguration({
        OAUTH_DYNAMIC_REGISTRATION: 'on',
        OAUTH_DYNAMIC_CLIENT_IDLE_DAYS: '7',
        OAUTH_REGISTRATIONS_PER_HOUR: '3',
        OAUTH_DYNAMIC_CLIENTS_MAX: '500',
      });
      expect(config.oauthClients).toEqual({
        dynamicRegistration: true,
        dynamicClientIdleDays: 7,
        registrationsPerHour: 3,
        dynamicClientsMax: 500,
      });
    });

    it('reads EXPOSED_REPORTS_PER_HOUR and EXPOSED_REPORT_MIN_RESPONSE_MS', () => {
      const config = loadConfiguration({ EXPOSED_REPORTS_PER_HOUR: '5', EXPOSED_REPORT_MIN_RESPONSE_MS: '0' });
      expect(config.rateLimit.exposedReportsPerHour).toBe(5);
      expect(config.exposedReportMinResponseMs).toBe(0);
    });

    it('accepts a PEM given on one line with literal \\n sequences', () => {
      const pem = ecPem();
      const config = loadConfiguration({ JWT_PRIVATE_KEY: pem.replace(/\n/g, '\\n') });
      expect(config.jwt.privateKeyPem).toBe(pem);
    });

    it('reads previous JWT public keys for rotation', () => {
      const previous = generateKeyPairSync('ec', { namedCurve: 'P-256' })
        .publicKey.export({ type: 'spki', format: 'pem' })
        .toString();
      expect(
        loadConfiguration({ JWT_PREVIOUS_PUBLIC_KEYS: JSON.stringify([previous]) }).jwt.previousPublicKeyPems,
      ).toEqual([previous]);
    });

    it.each([
      ['false', false],
      ['true', true],
      ['1', 1],
      ['2', 2],
      ['loopback', 'loopback'],
      ['10.0.0.0/8, loopback', '10.0.0.0/8, loopback'],
      ['192.168.1.7', '192.168.1.7'],
      ['fd00::/8', 'fd00::/8'],
    ])('reads TRUST_PROXY=%j as Express expects it', (raw, expected) => {
      expect(loadConfiguration({ TRUST_PROXY: raw }).trustProxy).toBe(expected);
    });
  });

  describe('refuses to start with a clear message naming the variable', () => {
    it.each([
      ['PORT', 'abc', 'PORT must be an integer from 0 to 65535 (got "abc")'],
      ['PORT', '70000', 'PORT must be an integer from 0 to 65535 (got "70000")'],
      ['PORT', '-1', 'PORT must be an integer from 0 to 65535 (got "-1")'],
      ['BODY_LIMIT_BYTES', '100', 'BODY_LIMIT_BYTES must be an integer from 256 to 10485760 (got "100")'],
      ['API_KEY_LAST_USED_FLUSH_MS', '5', 'API_KEY_LAST_USED_FLUSH_MS must be an integer from 10 to 60000 (got "5")'],
      ['USAGE_FLUSH_MS', '60001', 'USAGE_FLUSH_MS must be an integer from 10 to 60000 (got "60001")'],
      ['API_KEY_MAX_ACTIVE_PER_USER', '0', 'API_KEY_MAX_ACTIVE_PER_USER must be an integer from 1 to 10000 (got "0")'],
      [
        'API_KEY_MAX_ACTIVE_PER_USER',
        '10001',
        'API_KEY_MAX_ACTIVE_PER_USER must be an integer from 1 to 10000 (got "10001")',
      ],
      [
        'API_KEY_MAX_ACTIVE_PER_USER',
        '1e3',
        'API_KEY_MAX_ACTIVE_PER_USER must be an integer from 1 to 10000 (got "1e3")',
      ],
      ['AUDIT_RETENTION_DAYS', '0', 'AUDIT_RETENTION_DAYS must be an integer from 1 to 36500 (got "0")'],
      ['AUDIT_RETENTION_DAYS', '36501', 'AUDIT_RETENTION_DAYS must be an integer from 1 to 36500 (got "36501")'],
      ['AUDIT_RETENTION_DAYS', '30d', 'AUDIT_RETENTION_DAYS must be an integer from 1 to 36500 (got "30d")'],
      ['LOG_LEVEL', 'loud', 'LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent (got "loud")'],
      ['API_KEY_ENV', 'Prod', 'API_KEY_ENV must be 1-16 lower-case letters or digits'],
      ['API_KEY_ENV', 'a.b', 'API_KEY_ENV must be 1-16 lower-case letters or digits'],
      ['API_KEY_ENV', 'x'.repeat(17), 'API_KEY_ENV must be 1-16 lower-case letters or digits'],
      [
        'API_KEY_PEPPER',
        'too-short',
        'API_KEY_PEPPER must be at least 32 characters of random data (e.g. `openssl rand -base64 32`)',
      ],
      [
        'API_KEY_PEPPER',
        'x'.repeat(40),
        'API_KEY_PEPPER must be at least 32 characters of random data (e.g. `openssl rand -base64 32`)',
      ],
      ['JWT_PRIVATE_KEY', 'not a pem', 'JWT_PRIVATE_KEY must be a PEM-encoded EC P-256 private key (ES256)'],
      [
        'JWT_PRIVATE_KEY',
        generateKeyPairSync('rsa', { modulusLength: 2048 })
          .privateKey.export({ type: 'pkcs8', format: 'pem' })
          .toString(),
        'JWT_PRIVATE_KEY must be a PEM-encoded EC P-256 private key (ES256)',
      ],
      ['JWT_PREVIOUS_PUBLIC_KEYS', 'not json', 'JWT_PREVIOUS_PUBLIC_KEYS must be a JSON array of PEM strings'],
      ['JWT_PREVIOUS_PUBLIC_KEYS', '[1]', 'JWT_PREVIOUS_PUBLIC_KEYS must be a JSON array of PEM strings'],
      [
        'JWT_PREVIOUS_PUBLIC_KEYS',
        '["nope"]',
        'JWT_PREVIOUS_PUBLIC_KEYS: entry 0 is not a PEM-encoded EC P-256 public key',
      ],
      [
        'INTEGRATIONS_ENCRYPTION_KEY',
        randomBytes(16).toString('base64'),
        'INTEGRATIONS_ENCRYPTION_KEY must be 32 bytes, base64-encoded (e.g. `openssl rand -base64 32`)',
      ],
      ['DATABASE_URL', 'mysql://db/x', 'DATABASE_URL must start with sqlite: or postgres://'],
      ['DATABASE_URL', 'sqlite:', 'DATABASE_URL sqlite: needs a file path, e.g. sqlite:./data/gatehouse.sqlite'],
      ['DATABASE_URL', 'postgres://[bad', 'DATABASE_URL is not a valid postgres:// URL'],
      [
        'TRUST_PROXY',
        'yes',
        'TRUST_PROXY must be true, false, a number of hops, or a comma-separated list of addresses, subnets, loopback, linklocal or uniquelocal',
      ],
      [
        'TRUST_PROXY',
        '10.0.0.0/99',
        'TRUST_PROXY must be true, false, a number of hops, or a comma-separated list of addresses, subnets, loopback, linklocal or uniquelocal',
      ],
    ])('%s=%j', (name, value, message) => {
      expect(problems({ [name]: value })).toEqual([message]);
    });

    it.each([
      [
        'MONITORING_VALIDATION_DEADLINE_MS',
        '50',
        'MONITORING_VALIDATION_DEADLINE_MS must be an integer from 100 to 120000 (got "50")',
      ],
      [
        'MONITORING_VALIDATIONS_PER_MINUTE',
        '0',
        'MONITORING_VALIDATIONS_PER_MINUTE must be an integer from 1 to 100000 (got "0")',
      ],
      [
        'MONITORING_MAX_CONCURRENT_VALIDATIONS',
        'many',
        'MONITORING_MAX_CONCURRENT_VALIDATIONS must be an integer from 1 to 1000 (got "many")',
      ],
      ['OAUTH_DYNAMIC_REGISTRATION', 'true', 'OAUTH_DYNAMIC_REGISTRATION must be one of off, on (got "true")'],
      [
        'OAUTH_DYNAMIC_CLIENT_IDLE_DAYS',
        '0',
        'OAUTH_DYNAMIC_CLIENT_IDLE_DAYS must be an integer from 1 to 3650 (got "0")',
      ],
      [
        'OAUTH_REGISTRATIONS_PER_HOUR',
        '0',
        'OAUTH_REGISTRATIONS_PER_HOUR must be an integer from 1 to 100000 (got "0")',
      ],
      ['EXPOSED_REPORTS_PER_HOUR', '0', 'EXPOSED_REPORTS_PER_HOUR must be an integer from 1 to 100000 (got "0")'],
      ['EXPOSED_REPORTS_PER_HOUR', '1.5', 'EXPOSED_REPORTS_PER_HOUR must be an integer from 1 to 100000 (got "1.5")'],
      [
        'EXPOSED_REPORT_MIN_RESPONSE_MS',
        '10001',
        'EXPOSED_REPORT_MIN_RESPONSE_MS must be an integer from 0 to 10000 (got "10001")',
      ],
    ])('%s=%j', (name, value, message) => {
      expect(problems({ [name]: value })).toEqual([message]);
    });

    it('DATABASE_SCHEMA must be a lower-case SQL identifier', () => {
      expect(problems({ DATABASE_URL: 'postgres://db/x', DATABASE_SCHEMA: 'Bad-Name' })).toEqual([
        'DATABASE_SCHEMA must be a lower-case SQL identifier',
      ]);
    });

    it('reports every problem at once', () => {
      const found = problems({ PORT: 'x', LOG_LEVEL: 'y', API_KEY_ENV: 'Z' });
      expect(found).toHaveLength(3);
      try {
        loadConfiguration({ PORT: 'x', LOG_LEVEL: 'y', API_KEY_ENV: 'Z' });
      } catch (error) {
        expect((error as Error).message).toBe(`invalid configuration:\n  - ${found.join('\n  - ')}`);
      }
    });
  });

  describe('NODE_ENV', () => {
    it.each([
      [undefined, false],
      ['development', false],
      ['test', false],
      ['production', true],
    ])('%j: production is %j', (value, production) => {
      const env = production ? { NODE_ENV: value, ...productionSecrets() } : { NODE_ENV: value };
      expect(loadConfiguration(env).production).toBe(production);
    });

    it('unset: loopback by default and only loopback; set, 0.0.0.0 by default', () => {
      for (const HOST of ['127.0.0.1', '127.0.0.2', 'localhost', '::1']) {
        expect(loadConfiguration({ HOST }).host).toBe(HOST);
      }
      for (const HOST of ['0.0.0.0', '::', '10.0.0.5']) {
        expect(problems({ HOST })).toEqual([
          `HOST=${HOST} listens beyond this machine, but NODE_ENV is not set: set NODE_ENV=production for a deployment (or NODE_ENV=development to run a development server on the network)`,
        ]);
        expect(problems({ HOST, NODE_ENV: '' })).toHaveLength(1);
        expect(loadConfiguration({ HOST, NODE_ENV: 'development' }).host).toBe(HOST);
      }
      for (const NODE_ENV of ['development', 'test']) {
        expect(loadConfiguration({ NODE_ENV })).toMatchObject({ host: '0.0.0.0', environmentUnset: false });
      }
      expect(loadConfiguration({ NODE_ENV: 'production', ...productionSecrets() }).host).toBe('0.0.0.0');
    });

    // `prod` used to run as development: generated local secrets, MONITORING_API_BASE_URL accepted.
    it.each([['prod'], ['Production'], ['staging'], ['dev']])('refuses %j, naming the variable', (value) => {
      expect(problems({ NODE_ENV: value, ...productionSecrets() })).toEqual([
        `NODE_ENV must be one of development, test, production (got "${value}")`,
      ]);
    });
  });

  describe('MONITORING_API_BASE_URL (tests and local trials only)', () => {
    it.each([
      ['http://127.0.0.1:4010', 'http://127.0.0.1:4010'],
      ['http://127.0.0.1:4010/', 'http://127.0.0.1:4010'],
      ['https://127.10.20.30:8443', 'https://127.10.20.30:8443'],
      ['http://127.1:4010', 'http://127.0.0.1:4010'],
      ['http://localhost:4010', 'http://localhost:4010'],
      ['http://LOCALHOST:4010', 'http://localhost:4010'],
      ['http://[::1]:4010', 'http://[::1]:4010'],
      ['http://[0:0:0:0:0:0:0:1]:4010', 'http://[::1]:4010'],
    ])('accepts the loopback origin %j (as %j)', (raw, origin) => {
      for (const NODE_ENV of ['development', 'test']) {
        expect(loadConfiguration({ NODE_ENV, MONITORING_API_BASE_URL: raw }).integrations.monitoringApiBaseUrl).toBe(
          origin,
        );
      }
    });

    it.each([
      ['http://10.0.0.7:4010'],
      ['http://192.168.1.2'],
      ['http://0.0.0.0:4010'],
      ['https://api.datadoghq.com'],
      ['http://collector.example.com:4010'],
      ['http://127.0.0.1.example.com'],
      ['http://localhost.example.com'],
      ['http://127.0.0.1@collector.example.com'],
      ['http://user:password@127.0.0.1:4010'],
      ['http://[::2]:4010'],
      ['http://[::ffff:10.0.0.7]'],
    ])('refuses %j, which is not a loopback address, in every environment', (raw) => {
      for (const NODE_ENV of ['development', 'test']) {
        expect(problems({ NODE_ENV, MONITORING_API_BASE_URL: raw })).toEqual([
          'MONITORING_API_BASE_URL must be on a loopback address (127.0.0.0/8, [::1] or localhost)',
        ]);
      }
    });

    it.each([
      ['127.0.0.1:4010'],
      ['ftp://127.0.0.1'],
      ['http://127.0.0.1:4010/api'],
      ['http://127.0.0.1/?x=1'],
      ['http://'],
    ])('refuses %j, which is not an http(s) origin', (raw) => {
      expect(problems({ MONITORING_API_BASE_URL: raw })).toEqual([
        'MONITORING_API_BASE_URL must be an http(s) origin such as http://127.0.0.1:4010',
      ]);
    });

    it('is refused in production, even on loopback', () => {
      expect(
        problems({ NODE_ENV: 'production', ...productionSecrets(), MONITORING_API_BASE_URL: 'http://127.0.0.1:4010' }),
      ).toEqual(['MONITORING_API_BASE_URL is for tests and local runs; it is refused when NODE_ENV=production']);
    });
  });

  describe('INTEGRATIONS_PREVIOUS_ENCRYPTION_KEYS', () => {
    const key = (): string => randomBytes(32).toString('base64');

    it('reads id:key pairs', () => {
      const [a, b] = [key(), key()];
      expect(
        loadConfiguration({
          INTEGRATIONS_ENCRYPTION_KEY_ID: 'k3',
          INTEGRATIONS_PREVIOUS_ENCRYPTION_KEYS: `k1:${a}, k2:${b}`,
        }).integrations.previousEncryptionKeys,
      ).toEqual([
        { id: 'k1', key: a },
        { id: 'k2', key: b },
      ]);
    });

    // The current key would shadow it: values sealed with the old key would no longer open.
    it('refuses an entry with the id of the current key', () => {
      expect(
        problems({
          INTEGRATIONS_ENCRYPTION_KEY_ID: 'k2',
          INTEGRATIONS_PREVIOUS_ENCRYPTION_KEYS: `k1:${key()},k2:${key()}`,
        }),
      ).toEqual([
        'INTEGRATIONS_PREVIOUS_ENCRYPTION_KEYS: "k2" is the id of the current key (INTEGRATIONS_ENCRYPTION_KEY_ID); give the current key a new id',
      ]);
    });

    it('refuses an entry with the default id k1 when INTEGRATIONS_ENCRYPTION_KEY_ID is unset', () => {
      expect(problems({ INTEGRATIONS_PREVIOUS_ENCRYPTION_KEYS: `k1:${key()}` })).toEqual([
        'INTEGRATIONS_PREVIOUS_ENCRYPTION_KEYS: "k1" is the id of the current key (INTEGRATIONS_ENCRYPTION_KEY_ID); give the current key a new id',
      ]);
    });

    it('refuses one id listed twice', () => {
      expect(
        problems({
          INTEGRATIONS_ENCRYPTION_KEY_ID: 'k3',
          INTEGRATIONS_PREVIOUS_ENCRYPTION_KEYS: `k1:${key()},k1:${key()}`,
        }),
      ).toEqual(['INTEGRATIONS_PREVIOUS_ENCRYPTION_KEYS: the id "k1" is listed twice']);
    });
  });

  describe('production (NODE_ENV=production)', () => {
    it('starts with all three secrets configured', () => {
      const config = loadConfiguration({ NODE_ENV: 'production', ...productionSecrets() });
      expect(config.production).toBe(true);
    });

    it.each([['API_KEY_PEPPER'], ['JWT_PRIVATE_KEY'], ['INTEGRATIONS_ENCRYPTION_KEY']])(
      'refuses to start without %s',
      (name) => {
        const env = { NODE_ENV: 'production', ...productionSecrets(), [name]: undefined };
        expect(problems(env)).toEqual([`${name} is required when NODE_ENV=production`]);
      },
    );

    it('refuses to start with none of them, naming each', () => {
      expect(problems({ NODE_ENV: 'production' })).toEqual([
        'API_KEY_PEPPER is required when NODE_ENV=production',
        'JWT_PRIVATE_KEY is required when NODE_ENV=production',
        'INTEGRATIONS_ENCRYPTION_KEY is required when NODE_ENV=production',
        'JWT_ISSUER must be an https:// URL when NODE_ENV=production (got http://localhost:3000, from PUBLIC_BASE_URL)',
      ]);
    });

    it('takes the issuer from PUBLIC_BASE_URL, or JWT_ISSUER, which must be https://', () => {
      expect(loadConfiguration({ NODE_ENV: 'production', ...productionSecrets() }).jwt.issuer).toBe(
        'https://gatehouse.example.com',
      );
      const issuer = 'https://id.example.com/tenant';
      expect(loadConfiguration({ NODE_ENV: 'production', ...productionSecrets(), JWT_ISSUER: issuer }).jwt.issuer).toBe(
        issuer,
      );
      expect(problems({ NODE_ENV: 'production', ...productionSecrets(), JWT_ISSUER: 'http://id.example.com' })).toEqual(
        ['JWT_ISSUER must be an https:// URL when NODE_ENV=production (got http://id.example.com)'],
      );
    });

    it('refuses a placeholder pepper', () => {
      expect(problems({ NODE_ENV: 'production', ...productionSecrets(), API_KEY_PEPPER: 'changeme' })).toEqual([
        'API_KEY_PEPPER must be at least 32 characters of random data (e.g. `openssl rand -base64 32`)',
      ]);
    });

    it('refuses TRUST_PROXY=true (any client could choose its address), asking for hops or subnets', () => {
      expect(problems({ NODE_ENV: 'production', ...productionSecrets(), TRUST_PROXY: 'true' })).toEqual([
        'TRUST_PROXY=true is refused when NODE_ENV=production: it trusts any X-Forwarded-For a client sends; set the number of proxy hops in front of the service (e.g. 1) or their addresses or subnets',
      ]);
      // Outside production it stays available (a local proxy, a trial).
      expect(loadConfiguration({ TRUST_PROXY: 'true' }).trustProxy).toBe(true);
    });

    it.each([['1'], ['10.0.0.0/8'], ['loopback, fd00::/8'], ['false']])('accepts TRUST_PROXY=%s', (raw) => {
      expect(problems({ NODE_ENV: 'production', ...productionSecrets(), TRUST_PROXY: raw })).toEqual([]);
    });
  });

  describe('metrics listener (docs/operations.md#metrics)', () => {
    it('listens on 127.0.0.1:9464 by default: loopback, never the public port', () => {
      expect(loadConfiguration({}).metrics).toEqual({ enabled: true, host: '127.0.0.1', port: 9464 });
    });

    it.each([
      [{ METRICS_PORT: '0' }, { enabled: true, host: '127.0.0.1', port: 0 }],
      [
        { METRICS_PORT: ' 9100 ', METRICS_HOST: '0.0.0.0' },
        { enabled: true, host: '0.0.0.0', port: 9100 },
      ],
      [{ METRICS_HOST: '::' }, { enabled: true, host: '::', port: 9464 }],
      [{ METRICS_HOST: 'localhost' }, { enabled: true, host: 'localhost', port: 9464 }],
      [{ METRICS_PORT: 'off' }, { enabled: false, host: '127.0.0.1', port: 0 }],
      [
        { PORT: '0', METRICS_PORT: '0' },
        { enabled: true, host: '127.0.0.1', port: 0 },
      ],
    ])('reads %j', (env, expected) => {
      expect(loadConfiguration(env).metrics).toEqual(expected);
    });

    it.each([
      [{ METRICS_PORT: 'abc' }, 'METRICS_PORT must be a port from 0 to 65535, or off (got "abc")'],
      [{ METRICS_PORT: '65536' }, 'METRICS_PORT must be a port from 0 to 65535, or off (got "65536")'],
      [{ METRICS_PORT: 'OFF' }, 'METRICS_PORT must be a port from 0 to 65535, or off (got "OFF")'],
      [{ METRICS_PORT: '3000' }, 'METRICS_PORT must differ from PORT: metrics are never served on the public port'],
      [{ PORT: '9464' }, 'METRICS_PORT must differ from PORT: metrics are never served on the public port'],
      [
        { METRICS_HOST: 'metrics.example.com' },
        'METRICS_HOST must be an IP address (e.g. 127.0.0.1, 0.0.0.0 or ::) or localhost',
      ],
    ])('refuses %j', (env, message) => {
      expect(problems(env)).toEqual([message]);
    });
  });

  describe('shutdown (docs/operations.md#graceful-shutdown)', () => {
    it('drains for 0 ms and gives the whole shutdown 8000 ms by default', () => {
      expect(loadConfiguration({})).toMatchObject({ shutdownDrainMs: 0, shutdownTimeoutMs: 8000 });
    });

    it('reads SHUTDOWN_DRAIN_MS below SHUTDOWN_TIMEOUT_MS', () => {
      const config = loadConfiguration({ SHUTDOWN_DRAIN_MS: '5000', SHUTDOWN_TIMEOUT_MS: '20000' });
      expect(config).toMatchObject({ shutdownDrainMs: 5000, shutdownTimeoutMs: 20000 });
    });

    it.each([
      ['abc', 'SHUTDOWN_DRAIN_MS must be an integer from 0 to 60000 (got "abc")'],
      ['60001', 'SHUTDOWN_DRAIN_MS must be an integer from 0 to 60000 (got "60001")'],
      ['8000', 'SHUTDOWN_DRAIN_MS must be less than SHUTDOWN_TIMEOUT_MS, which bounds the whole shutdown'],
    ])('refuses SHUTDOWN_DRAIN_MS=%j with the default timeout', (value, message) => {
      expect(problems({ SHUTDOWN_DRAIN_MS: value })).toEqual([message]);
    });

    it('accepts no drain with no timeout (exit at once)', () => {
      expect(problems({ SHUTDOWN_DRAIN_MS: '0', SHUTDOWN_TIMEOUT_MS: '0' })).toEqual([]);
    });
  });
});

describe('resolveSecrets', () => {
  /** The secrets without the note that this call generated them (the admin CLI's warning). */
  const secretsOf = (config: AppConfiguration): Secrets => {
    const { generatedFile: _generated, ...secrets } = resolveSecrets(config);
    return secrets;
  };
  let dataDir: string;
  beforeEach(() => {
    dataDir = join(mkdtempSync(join(tmpdir(), 'gatehouse-secrets-')), 'data');
  });
  afterEach(() => rmSync(join(dataDir, '..'), { recursive: true, force: true }));

  it('creates local secrets once (mode 0600) and reuses them on every later start', () => {
    const file = join(dataDir, LOCAL_SECRETS_FILE);
    expect(resolveSecrets(loadConfiguration({ DATA_DIR: join(dataDir, 'fresh') })).generatedFile).toBe(
      join(dataDir, 'fresh', LOCAL_SECRETS_FILE),
    );
    expect(resolveSecrets(loadConfiguration({ DATA_DIR: join(dataDir, 'fresh') })).generatedFile).toBeUndefined();
    const first = secretsOf(loadConfiguration({ DATA_DIR: dataDir }));
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(first.apiKeyPepper.length).toBeGreaterThanOrEqual(32);
    expect(Buffer.from(first.integrationsEncryptionKey, 'base64')).toHaveLength(32);
    expect(() => loadConfiguration({ JWT_PRIVATE_KEY: first.jwtPrivateKeyPem })).not.toThrow();

    const second = secretsOf(loadConfiguration({ DATA_DIR: dataDir }));
    expect(second).toEqual(first);
    expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual(first);
  });

  it('makes different secrets for different data directories', () => {
    const other = join(dataDir, '..', 'other');
    const a = secretsOf(loadConfiguration({ DATA_DIR: dataDir }));
    const b = secretsOf(loadConfiguration({ DATA_DIR: other }));
    expect(b.apiKeyPepper).not.toBe(a.apiKeyPepper);
    expect(b.jwtPrivateKeyPem).not.toBe(a.jwtPrivateKeyPem);
  });

  it('prefers configured secrets and fills in only the missing ones', () => {
    const pepper = randomBytes(32).toString('base64');
    const secrets = secretsOf(loadConfiguration({ DATA_DIR: dataDir, API_KEY_PEPPER: pepper }));
    const local = JSON.parse(readFileSync(join(dataDir, LOCAL_SECRETS_FILE), 'utf8'));
    expect(secrets).toEqual({
      apiKeyPepper: pepper,
      jwtPrivateKeyPem: local.jwtPrivateKeyPem,
      integrationsEncryptionKey: local.integrationsEncryptionKey,
    });
  });

  it('writes no file when every secret is configured', () => {
    const env = productionSecrets();
    const secrets = secretsOf(loadConfiguration({ DATA_DIR: dataDir, ...env }));
    expect(secrets).toEqual({
      apiKeyPepper: env.API_KEY_PEPPER,
      jwtPrivateKeyPem: env.JWT_PRIVATE_KEY!.trim(),
      integrationsEncryptionKey: env.INTEGRATIONS_ENCRYPTION_KEY,
    });
    expect(existsSync(join(dataDir, LOCAL_SECRETS_FILE))).toBe(false);
  });

  it('refuses to start when the file can be read by group or others, naming it and the fix', () => {
    const first = secretsOf(loadConfiguration({ DATA_DIR: dataDir }));
    const file = join(dataDir, LOCAL_SECRETS_FILE);
    for (const mode of [0o644, 0o640, 0o604, 0o620]) {
      chmodSync(file, mode);
      let error: unknown;
      try {
        secretsOf(loadConfiguration({ DATA_DIR: dataDir }));
      } catch (caught) {
        error = caught;
      }
      expect(error).toBeInstanceOf(ConfigurationError);
      expect((error as ConfigurationError).problems).toEqual([
        `${file} can be read or written by group or others (mode 0${mode.toString(8)}); run \`chmod 600 ${file}\``,
      ]);
    }
    chmodSync(file, 0o600);
    expect(secretsOf(loadConfiguration({ DATA_DIR: dataDir }))).toEqual(first);
    chmodSync(file, 0o400);
    expect(secretsOf(loadConfiguration({ DATA_DIR: dataDir }))).toEqual(first);
  });

  const refusal = (): string[] => {
    try {
      secretsOf(loadConfiguration({ DATA_DIR: dataDir }));
    } catch (error) {
      if (error instanceof ConfigurationError) return error.problems;
      throw error;
    }
    return [];
  };
  const uid = process.getuid!();
  // Giving a file away needs root (CI runs as root); elsewhere these two cannot be set up.
  const asRoot = uid === 0 ? it : it.skip;

  asRoot('refuses a file that another user owns, naming the owner and the fix', () => {
    const first = secretsOf(loadConfiguration({ DATA_DIR: dataDir }));
    const file = join(dataDir, LOCAL_SECRETS_FILE);
    chownSync(file, 65534, 65534);
    expect(refusal()).toEqual([
      `${file} is owned by uid 65534, not by the user running Gatehouse (uid ${uid}); run \`chown ${uid} ${file}\` or run Gatehouse as its owner`,
    ]);
    chownSync(file, uid, process.getgid!());
    expect(secretsOf(loadConfiguration({ DATA_DIR: dataDir }))).toEqual(first);
  });

  asRoot('refuses a DATA_DIR that another user owns', () => {
    mkdirSync(dataDir, { mode: 0o700 });
    chownSync(dataDir, 65534, 65534);
    expect(refusal()).toEqual([
      `${dataDir} is owned by uid 65534, not by the user running Gatehouse (uid ${uid}); run \`chown ${uid} ${dataDir}\` or run Gatehouse as its owner`,
    ]);
    expect(existsSync(join(dataDir, LOCAL_SECRETS_FILE))).toBe(false);
  });

  it('refuses a DATA_DIR that group or others can write to, before reading or writing the file', () => {
    for (const mode of [0o770, 0o702, 0o777, 0o1777]) {
      mkdirSync(dataDir, { recursive: true });
      chmodSync(dataDir, mode);
      expect(refusal()).toEqual([
        `${dataDir} can be written by group or others (mode ${mode.toString(8).padStart(4, '0')}); run \`chmod go-w ${dataDir}\``,
      ]);
      expect(existsSync(join(dataDir, LOCAL_SECRETS_FILE))).toBe(false);
    }
    chmodSync(dataDir, 0o755);
    expect(refusal()).toEqual([]);
    expect(statSync(join(dataDir, LOCAL_SECRETS_FILE)).mode & 0o777).toBe(0o600);
  });

  it('names the file when it is not JSON', () => {
    secretsOf(loadConfiguration({ DATA_DIR: dataDir }));
    const file = join(dataDir, LOCAL_SECRETS_FILE);
    writeFileSync(file, '{"apiKeyPepper": "trunc');
    expect(() => secretsOf(loadConfiguration({ DATA_DIR: dataDir }))).toThrow(
      `${file} is not valid JSON: restore it, or remove it to generate new local secrets`,
    );
  });

  /**
   * Instances starting together on one empty DATA_DIR: every loader (worker threads, released
   * at the same instant, round after round) gets the same secrets, none reads a partial file, and
   * no temporary file is left behind.
   */
  it('gives every instance starting at once the same secrets', async () => {
    const THREADS = 8;
    const ROUNDS = 60;
    const configs: AppConfiguration[] = Array.from({ length: ROUNDS }, (_, round) =>
      loadConfiguration({ DATA_DIR: join(dataDir, `round-${round}`) }),
    );
    const gate = new Int32Array(new SharedArrayBuffer(4));
    const code = `
      const { parentPort, workerData } = require('node:worker_threads');
      const { resolveSecrets } = require(workerData.module);
      const gate = new Int32Array(workerData.gate);
      workerData.configs.forEach((config, round) => {
        while (Atomics.load(gate, 0) <= round) Atomics.wait(gate, 0, round);
        try {
          const { generatedFile, ...secrets } = resolveSecrets(config);
          parentPort.postMessage({ round, secrets });
        } catch (error) {
          parentPort.postMessage({ round, error: String(error) });
        }
      });`;
    type Answer = { round: number; secrets?: Secrets; error?: string };
    const answers: Answer[][] = configs.map(() => []);
    let round = { done: (): void => undefined, fail: (_error: Error): void => undefined };
    const workers = Array.from({ length: THREADS }, () => {
      const worker = new Worker(code, {
        eval: true,
        workerData: { module: testWorkerFile('config/local-secrets.js'), gate: gate.buffer, configs },
      });
      worker.on('message', (answer: Answer) => {
        answers[answer.round].push(answer);
        if (answers[answer.round].length === THREADS) round.done();
      });
      worker.on('error', (error) => round.fail(error));
      return worker;
    });
    try {
      for (let index = 0; index < ROUNDS; index += 1) {
        const done = new Promise<void>((resolve, reject) => (round = { done: resolve, fail: reject }));
        Atomics.store(gate, 0, index + 1);
        Atomics.notify(gate, 0);
        await done;
      }
    } finally {
      await Promise.all(workers.map((worker) => worker.terminate()));
    }
    const failures = answers.flat().filter((answer) => answer.error !== undefined);
    const split = answers.filter((round) => new Set(round.map((answer) => JSON.stringify(answer.secrets))).size > 1);
    console.log(
      `local secrets: ${ROUNDS} rounds of ${THREADS} loaders at once: ${failures.length} failed, ${split.length} rounds with different secrets`,
    );
    expect(failures.map((answer) => answer.error)).toEqual([]);
    expect(split).toEqual([]);
    configs.forEach((config, round) => {
      const file = join(config.dataDir, LOCAL_SECRETS_FILE);
      expect(readdirSync(config.dataDir)).toEqual([LOCAL_SECRETS_FILE]);
      expect(statSync(file).mode & 0o777).toBe(0o600);
      expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual(answers[round][0].secrets);
    });
  }, 60_000);

  it('uses a secrets file another process wrote first', () => {
    const theirs = {
      apiKeyPepper: 'a'.repeat(44),
      jwtPrivateKeyPem: ecPem(),
      integrationsEncryptionKey: 'b'.repeat(44),
    };
    secretsOf(loadConfiguration({ DATA_DIR: dataDir }));
    writeFileSync(join(dataDir, LOCAL_SECRETS_FILE), JSON.stringify(theirs));
    expect(secretsOf(loadConfiguration({ DATA_DIR: dataDir }))).toEqual(theirs);
  });
});

describe('web console settings (docs/operations.md#web-console)', () => {
  it('defaults: links on http://localhost:<PORT>, the built console beside the compiled server, 10 failed sign-ins', () => {
    const config = loadConfiguration({ PORT: '8080' });
    expect(config.console).toEqual({
      assetsDir: resolve(__dirname, '..', 'console'),
      publicBaseUrl: 'http://localhost:8080',
      publicBaseUrlSet: false,
      signInFailuresPerMinute: 10,
    });
  });

  it.each([
    ['https://gatehouse.example.com', 'https://gatehouse.example.com'],
    ['https://gatehouse.example.com/', 'https://gatehouse.example.com'],
    ['https://example.com/gatehouse/', 'https://example.com/gatehouse'],
    ['http://127.0.0.1:3000', 'http://127.0.0.1:3000'],
  ])('PUBLIC_BASE_URL %j is used as %j', (raw, expected) => {
    expect(loadConfiguration({ PUBLIC_BASE_URL: raw }).console.publicBaseUrl).toBe(expected);
  });

  it.each([
    'gatehouse.example.com',
    'ftp://example.com',
    'https://user:pw@example.com',
    'https://example.com/?a=1',
    'https://example.com/#x',
  ])('refuses PUBLIC_BASE_URL %j', (raw) => {
    expect(problems({ PUBLIC_BASE_URL: raw })).toEqual([
      'PUBLIC_BASE_URL must be an http(s) URL without credentials, query or fragment, e.g. https://gatehouse.example.com',
    ]);
  });

  it('reads CONSOLE_ASSETS_DIR and the sign-in failure limit', () => {
    const config = loadConfiguration({
      CONSOLE_ASSETS_DIR: '/srv/console',
      CONSOLE_SIGN_IN_FAILURE_LIMIT_PER_MINUTE: '3',
    });
    expect(config.console).toMatchObject({ assetsDir: '/srv/console', signInFailuresPerMinute: 3 });
    expect(problems({ CONSOLE_SIGN_IN_FAILURE_LIMIT_PER_MINUTE: '0' })).toEqual([
      'CONSOLE_SIGN_IN_FAILURE_LIMIT_PER_MINUTE must be an integer from 1 to 100000 (got "0")',
    ]);
  });
});
