import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { ConfigurationError, Environment, loadConfiguration } from './configuration';
import { LOCAL_SECRETS_FILE, resolveSecrets } from './local-secrets';

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
});

describe('loadConfiguration', () => {
  describe('defaults (an empty environment is a working local set-up)', () => {
    const config = loadConfiguration({});

    it('serves on 0.0.0.0:3000 outside production', () => {
      expect(config).toMatchObject({ production: false, host: '0.0.0.0', port: 3000, logLevel: 'info' });
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
        maxActivePerUser: 100,
      });
      expect(config.jwt).toEqual({
        privateKeyPem: undefined,
        previousPublicKeyPems: [],
        issuer: 'gatehouse',
        audience: 'gatehouse',
      });
    });

    it('leaves secrets unset (they are generated locally, see resolveSecrets)', () => {
      expect(config.integrations.encryptionKey).toBeUndefined();
      expect(config.redisUrl).toBeUndefined();
    });
  });

  describe('values', () => {
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
      ]);
    });

    it('refuses a placeholder pepper', () => {
      expect(problems({ NODE_ENV: 'production', ...productionSecrets(), API_KEY_PEPPER: 'changeme' })).toEqual([
        'API_KEY_PEPPER must be at least 32 characters of random data (e.g. `openssl rand -base64 32`)',
      ]);
    });
  });
});

describe('resolveSecrets', () => {
  let dataDir: string;
  beforeEach(() => {
    dataDir = join(mkdtempSync(join(tmpdir(), 'gatehouse-secrets-')), 'data');
  });
  afterEach(() => rmSync(join(dataDir, '..'), { recursive: true, force: true }));

  it('creates local secrets once (mode 0600) and reuses them on every later start', () => {
    const first = resolveSecrets(loadConfiguration({ DATA_DIR: dataDir }));
    const file = join(dataDir, LOCAL_SECRETS_FILE);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(first.apiKeyPepper.length).toBeGreaterThanOrEqual(32);
    expect(Buffer.from(first.integrationsEncryptionKey, 'base64')).toHaveLength(32);
    expect(() => loadConfiguration({ JWT_PRIVATE_KEY: first.jwtPrivateKeyPem })).not.toThrow();

    const second = resolveSecrets(loadConfiguration({ DATA_DIR: dataDir }));
    expect(second).toEqual(first);
    expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual(first);
  });

  it('makes different secrets for different data directories', () => {
    const other = join(dataDir, '..', 'other');
    const a = resolveSecrets(loadConfiguration({ DATA_DIR: dataDir }));
    const b = resolveSecrets(loadConfiguration({ DATA_DIR: other }));
    expect(b.apiKeyPepper).not.toBe(a.apiKeyPepper);
    expect(b.jwtPrivateKeyPem).not.toBe(a.jwtPrivateKeyPem);
  });

  it('prefers configured secrets and fills in only the missing ones', () => {
    const pepper = randomBytes(32).toString('base64');
    const secrets = resolveSecrets(loadConfiguration({ DATA_DIR: dataDir, API_KEY_PEPPER: pepper }));
    const local = JSON.parse(readFileSync(join(dataDir, LOCAL_SECRETS_FILE), 'utf8'));
    expect(secrets).toEqual({
      apiKeyPepper: pepper,
      jwtPrivateKeyPem: local.jwtPrivateKeyPem,
      integrationsEncryptionKey: local.integrationsEncryptionKey,
    });
  });

  it('writes no file when every secret is configured', () => {
    const env = productionSecrets();
    const secrets = resolveSecrets(loadConfiguration({ DATA_DIR: dataDir, ...env }));
    expect(secrets).toEqual({
      apiKeyPepper: env.API_KEY_PEPPER,
      jwtPrivateKeyPem: env.JWT_PRIVATE_KEY!.trim(),
      integrationsEncryptionKey: env.INTEGRATIONS_ENCRYPTION_KEY,
    });
    expect(existsSync(join(dataDir, LOCAL_SECRETS_FILE))).toBe(false);
  });

  it('uses a secrets file another process wrote first', () => {
    const theirs = {
      apiKeyPepper: 'a'.repeat(44),
      jwtPrivateKeyPem: ecPem(),
      integrationsEncryptionKey: 'b'.repeat(44),
    };
    resolveSecrets(loadConfiguration({ DATA_DIR: dataDir }));
    writeFileSync(join(dataDir, LOCAL_SECRETS_FILE), JSON.stringify(theirs));
    expect(resolveSecrets(loadConfiguration({ DATA_DIR: dataDir }))).toEqual(theirs);
  });
});
