import { ChildProcess, execFile, spawn } from 'node:child_process';
import { createHash, generateKeyPairSync, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { loadBetterSqlite3 } from '../../src/database/sqlite-driver';
import { Client } from 'pg';
import type { Environment } from '../../src/config/configuration';
import type { IdentityProvider } from '../support/identity-provider';
import { freePort } from '../support/ports';
import { createTestDatabase, TestDatabase } from '../support/test-app';

// This Node's better-sqlite3 (13 on Node 22+, 12 on Node 20: docs/adr/0019-node-24-and-complete-lock.md).
const Database = loadBetterSqlite3();

const ROOT = resolve(__dirname, '..', '..');
export const DIST = join(ROOT, 'dist');
export const ARTIFACTS = join(ROOT, 'test-artifacts', 'console');

/**
 * The server as `npm run build` leaves it (dist/main.js serving dist/console), as a child process on
 * a database of its own, and its admin CLI (dist/cli.js) on the same database and secrets.
 */
export class ConsoleServer {
  output = '';

  private constructor(
    private readonly child: ChildProcess,
    private readonly env: Environment,
    readonly database: TestDatabase,
    readonly baseUrl: string,
  ) {
    child.stdout!.on('data', (chunk: Buffer) => (this.output += chunk.toString()));
    child.stderr!.on('data', (chunk: Buffer) => (this.output += chunk.toString()));
  }

  static async start(extra: Environment): Promise<ConsoleServer> {
    for (const file of ['main.js', 'cli.js', join('console', 'index.html')]) {
      if (!existsSync(join(DIST, file))) throw new Error(`dist/${file} is missing: run \`npm run build\` first`);
    }
    mkdirSync(ARTIFACTS, { recursive: true });
    const database = createTestDatabase();
    const port = await freePort();
    const baseUrl = `http://127.0.0.1:${port}`;
    const env: Environment = {
      PATH: process.env.PATH,
      API_KEY_PEPPER: randomBytes(32).toString('base64'),
      JWT_PRIVATE_KEY: generateKeyPairSync('ec', { namedCurve: 'P-256' })
        .privateKey.export({ type: 'pkcs8', format: 'pem' })
        .toString(),
      INTEGRATIONS_ENCRYPTION_KEY: randomBytes(32).toString('base64'),
      ...database.env,
      HOST: '127.0.0.1',
      PORT: String(port),
      PUBLIC_BASE_URL: baseUrl,
      // A port of its own: two servers on one machine (two suites, two worktrees) would both want the default 9464.
      METRICS_PORT: '0',
      LOG_LEVEL: 'info',
      ...extra,
    };
    const child = spawn(process.execPath, [join(DIST, 'main.js')], {
      cwd: database.env.DATA_DIR, // no stray .env file
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const server = new ConsoleServer(child, env, database, baseUrl);
    const deadline = Date.now() + 30_000;
    for (;;) {
      if (child.exitCode !== null) throw new Error(`server exited at start:\n${server.output}`);
      try {
        if ((await fetch(`${baseUrl}/readyz`)).ok) return server;
      } catch {
        // not listening yet
      }
      if (Date.now() > deadline) {
        // Not left running: it would keep Jest from exiting and hold its database.
        await server.stop();
        throw new Error(`server did not start:\n${server.output}`);
      }
      await new Promise((ok) => setTimeout(ok, 100));
    }
  }

  /** `node dist/cli.js <argv>`: its one JSON object. */
  async cli(...argv: string[]): Promise<Record<string, unknown>> {
    const { stdout } = await promisify(execFile)(process.execPath, [join(DIST, 'cli.js'), ...argv], {
      cwd: this.database.env.DATA_DIR,
      env: { ...this.env, LOG_LEVEL: 'warn' },
    });
    return JSON.parse(stdout);
  }

  /**
   * `trusted-issuer add` of the provider for `org`: for single sign-on with its people client, or for workloads with
   * `audience`; the entry's id.
   */
  async trust(org: string, provider: IdentityProvider, kind: 'people' | 'workloads', audience = ''): Promise<string> {
    const flags =
      kind === 'people'
        ? ['--client-id', provider.people.clientId, '--client-secret', provider.people.clientSecret]
        : ['--audience', audience];
    const out = await this.cli(
      'trusted-issuer',
      'add',
      '--org',
      org,
      '--issuer',
      provider.issuer,
      '--kind',
      kind,
      ...flags,
    );
    return (out.trusted_issuer as { id: string }).id;
  }

  /** A member of `org` (made if missing) and a fresh sign-in link for them. */
  async member(org: string, email: string, role: 'admin' | 'member' | 'viewer'): Promise<{ userId: string }> {
    const out = await this.cli('bootstrap', '--org', org, '--email', email, '--role', role);
    return { userId: out.user_id as string };
  }

  async signInLink(org: string, email: string): Promise<string> {
    return (await this.cli('console-link', '--org', org, '--email', email)).url as string;
  }

  /** Moves a link's expiry into the past, as if its 10 minutes were over. */
  async expireLink(code: string): Promise<void> {
    const hash = createHash('sha256').update(code).digest('hex');
    await this.update('console_sign_in_links', 'code_hash', hash, new Date(Date.now() - 60_000));
  }

  /** Moves a key's expiry into the past, as if its lifetime (or its grace period) were over. */
  async expireKey(id: string): Promise<void> {
    await this.update('api_keys', 'id', id, new Date(Date.now() - 60_000));
  }

  /** Sets `expires_at` of the row of `table` whose `column` is `value` (timestamps are ISO 8601 text on SQLite). */
  private async update(table: string, column: string, value: string, expiresAt: Date): Promise<void> {
    const changed = await this.run(`UPDATE ${table} SET expires_at = ? WHERE ${column} = ?`, [
      expiresAt.toISOString(),
      value,
    ]);
    if (changed !== 1) throw new Error(`no ${table} row with ${column} ${value}`);
  }

  /**
   * Runs one statement on the server's database, written with `?` placeholders (numbered for PostgreSQL here): rows a
   * test needs that no route makes, such as weeks of usage counts.
   */
  async execute(statement: string, values: unknown[] = []): Promise<void> {
    await this.run(statement, values);
  }

  /** The statement run on SQLite or PostgreSQL; how many rows it changed. */
  private async run(statement: string, values: unknown[]): Promise<number> {
    const url = this.database.env.DATABASE_URL!;
    if (url.startsWith('sqlite:')) {
      const db = new Database(url.slice('sqlite:'.length));
      try {
        return db.prepare(statement).run(...values).changes;
      } finally {
        db.close();
      }
    }
    const client = new Client({ connectionString: url });
    await client.connect();
    try {
      await client.query(`SET search_path TO "${this.database.env.DATABASE_SCHEMA}"`);
      let n = 0;
      const result = await client.query(
        statement.replace(/\?/g, () => `$${(n += 1)}`),
        values,
      );
      return result.rowCount ?? 0;
    } finally {
      await client.end();
    }
  }

  async stop(): Promise<void> {
    if (this.child.exitCode === null) {
      const exited = new Promise((ok) => this.child.once('exit', ok));
      this.child.kill('SIGTERM');
      await exited;
    }
    await this.database.drop();
  }
}
