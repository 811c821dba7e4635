import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { INestApplication } from '@nestjs/common';
import { Test, TestingModuleBuilder } from '@nestjs/testing';
import { Logger } from 'nestjs-pino';
import { Client } from 'pg';
import type { DestinationStream } from 'pino';
import request from 'supertest';
import type TestAgent from 'supertest/lib/agent';
import type { CreateApiKeyResponse } from '../../src/api-keys/dto/api-key.view';
import { AppModule } from '../../src/app.module';
import { testBuildDirectory } from './build-directory';
import { closed, keepUntilClosed } from './leftovers';
import { TokenService } from '../../src/auth/token.service';
import { configureHttp } from '../../src/common/http-setup';
import { ExpressPlatform } from '../../src/common/http-platform';
import { APP_CONFIG } from '../../src/config/config.module';
import type { AppConfiguration, Environment } from '../../src/config/configuration';
import { IdentityService } from '../../src/identity/identity.service';
import { loadBetterSqlite3 } from '../../src/database/sqlite-driver';
import type { Role } from '../../src/identity/roles';

/** Which database the suite runs on: PostgreSQL when DATABASE_URL points at one, else SQLite. */
export const POSTGRES_URL = /^postgres(ql)?:\/\//.test(process.env.DATABASE_URL ?? '')
  ? process.env.DATABASE_URL
  : undefined;
export const DATABASE_KIND = POSTGRES_URL === undefined ? 'sqlite' : 'postgres';

// better-sqlite3 loads its native addon at the first `new Database()`: here, while the file's modules load, not in an
// application that a timed-out `beforeAll` left booting, where Jest refuses the load ("require(...) is not a function").
if (POSTGRES_URL === undefined) new (loadBetterSqlite3())(':memory:').close();

/**
 * Secrets shared by every test app of this process (and the CLI under test): one key pair, one pepper, one issuer
 * (the default one depends on PORT, which differs between the apps and servers a test starts).
 */
export const TEST_ISSUER = 'https://gatehouse.test';
export const testSecrets = {
  JWT_ISSUER: TEST_ISSUER,
  API_KEY_PEPPER: randomBytes(32).toString('base64'),
  JWT_PRIVATE_KEY: generateKeyPairSync('ec', { namedCurve: 'P-256' })
    .privateKey.export({ type: 'pkcs8', format: 'pem' })
    .toString(),
  INTEGRATIONS_ENCRYPTION_KEY: randomBytes(32).toString('base64'),
};

/** A database of its own (a temp SQLite file, or a fresh PostgreSQL schema) and its clean-up. */
export interface TestDatabase {
  env: Environment;
  drop(): Promise<void>;
}

export function createTestDatabase(): TestDatabase {
  const dataDir = mkdtempSync(join(tmpdir(), 'gatehouse-test-'));
  if (POSTGRES_URL === undefined) {
    return {
      env: { DATA_DIR: dataDir, DATABASE_URL: `sqlite:${join(dataDir, 'gatehouse.sqlite')}` },
      drop: () => Promise.resolve(rmSync(dataDir, { recursive: true, force: true })),
    };
  }
  const schema = `t_${randomBytes(6).toString('hex')}`;
  return {
    env: { DATA_DIR: dataDir, DATABASE_URL: POSTGRES_URL, DATABASE_SCHEMA: schema },
    drop: async () => {
      const client = new Client({ connectionString: POSTGRES_URL });
      await client.connect();
      try {
        await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      } finally {
        await client.end();
      }
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

export interface TestAppOptions {
  /** Variables on top of the test defaults (database, secrets, LOG_LEVEL=silent). */
  env?: Environment;
  /** Share another app's database (several instances on one database). */
  database?: TestDatabase;
  /** Adjust the testing module (override providers) before it is compiled. */
  override?: (builder: TestingModuleBuilder) => TestingModuleBuilder;
  /** Capture the JSON log lines (set LOG_LEVEL in `env` too: tests default to silent). */
  logStream?: DestinationStream;
}

export interface TestUser {
  organizationId: string;
  userId: string;
  email: string;
  role: Role;
  /** A session token, as `bootstrap` prints. */
  token: string;
}

export class TestApp {
  private counter = 0;

  constructor(
    readonly app: INestApplication,
    readonly env: Environment,
    readonly database: TestDatabase,
    private readonly ownsDatabase: boolean,
  ) {}

  get config(): AppConfiguration {
    return this.app.get<AppConfiguration>(APP_CONFIG);
  }

  http(): TestAgent {
    return request(this.app.getHttpServer());
  }

  get<T>(type: new (...args: never[]) => T): T {
    return this.app.get(type);
  }

  /** Creates (or reuses) an organization and a user with a role, and mints a session token. */
  async user(options: { org?: string; email?: string; role?: Role; ttl?: number } = {}): Promise<TestUser> {
    this.counter += 1;
    const identity = this.app.get(IdentityService);
    const organization = await identity.ensureOrganization(options.org ?? 'acme');
    const email = options.email ?? `user${this.counter}-${randomBytes(3).toString('hex')}@example.com`;
    const user = await identity.ensureUser(email);
    const role = options.role ?? 'admin';
    await identity.setRole(organization.id, user.id, role);
    await identity.readyForSession(organization.id, user.id);
    const token = await this.app.get(TokenService).mint({
      userId: user.id,
      organizationId: organization.id,
      lifetimeSeconds: options.ttl ?? 3600,
      tokenUse: 'session',
    });
    return { organizationId: organization.id, userId: user.id, email: user.email, role, token };
  }

  /**
   * POST /v1/user-api-keys as `user` (its session token, or `token`); returns the response body
   * (asserting 201). `fields` adds body fields (`scopes`, `expires_at`).
   */
  async createKey(
    user: Pick<TestUser, 'token'>,
    label?: string,
    fields: Record<string, unknown> = {},
  ): Promise<{ id: string; value: string; body: CreateApiKeyResponse }> {
    const response = await this.http()
      .post('/v1/user-api-keys')
      .set('Authorization', `Bearer ${user.token}`)
      .send(label === undefined ? fields : { label, ...fields })
      .expect(201);
    return { id: response.body.api_key.id, value: response.body.opaque_key, body: response.body };
  }

  /** POST /v1/token with an API key (and a narrowing body); returns the access token (asserting 200). */
  async exchange(value: string, body?: Record<string, unknown>): Promise<string> {
    const request = this.http().post('/v1/token').set('Authorization', `ApiKey ${value}`);
    const response = await (body === undefined ? request : request.send(body)).expect(200);
    return response.body.access_token;
  }

  async close(): Promise<void> {
    closed(this);
    await this.app.close();
    if (this.ownsDatabase) await this.database.drop();
  }
}

/**
 * The environment a test app (or the CLI under test) runs with on `database`. The metrics listener is on, on a free
 * loopback port (METRICS_PORT=0): the suites run in parallel, and several apps share a process.
 */
export function testEnvironment(database: TestDatabase, extra: Environment = {}): Environment {
  // A PostgreSQL connection gets 10 s, not production's 1 s: on a busy 2-core machine a connect can take longer, and
  // a suite's start must not fail for it (database-outage sets 1 s again: it waits out the time-out on purpose).
  const connect = { DATABASE_CONNECT_TIMEOUT_MS: '10000' };
  return { LOG_LEVEL: 'silent', METRICS_PORT: '0', ...connect, ...testSecrets, ...database.env, ...extra };
}

/**
 * Boots the real AppModule through Nest's testing module with the server's HTTP set-up. Closed with `close()`; one the
 * suite never closes (its set-up timed out meanwhile) is closed when the file ends (test/support/leftovers.ts).
 */
export function createTestApp(options: TestAppOptions = {}): Promise<TestApp> {
  return keepUntilClosed(boot(options), (t) => t.close());
}

async function boot(options: TestAppOptions): Promise<TestApp> {
  const database = options.database ?? createTestDatabase();
  const env = testEnvironment(database, options.env);
  let builder = Test.createTestingModule({
    imports: [AppModule.forRoot({ env, logDestination: options.logStream, workerDirectory: testBuildDirectory() })],
  });
  if (options.override !== undefined) builder = options.override(builder);
  const moduleRef = await builder.compile();
  const app = moduleRef.createNestApplication(new ExpressPlatform(), { bodyParser: false, bufferLogs: true });
  try {
    app.useLogger(app.get(Logger));
    configureHttp(app, app.get<AppConfiguration>(APP_CONFIG));
    await app.init();
  } catch (error) {
    // Compiled, it holds database connections and worker threads: a failed start leaves nothing running.
    await app.close().catch(() => undefined);
    if (options.database === undefined) await database.drop().catch(() => undefined);
    throw error;
  }
  return new TestApp(app, env, database, options.database === undefined);
}
