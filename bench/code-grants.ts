import { createHash, randomBytes, randomUUID } from 'node:crypto';
import type autocannon from 'autocannon';
import { Client } from 'pg';
import { loadBetterSqlite3 } from '../src/database/sqlite-driver';
import { newRefreshToken } from '../src/grants/grant-secrets';

/**
 * Scenarios (i) and (j) of bench/run.ts: POST /oauth/token with an authorization code, and with a refresh token
 * (docs/mcp.md#authorization-code). A code works once and a refresh token too, so every request needs a new one:
 *   - the grants are made through the real flow (an organization's client registered by the admin, GET
 *     /oauth/authorize, the consent's Allow, the code's token request), one per client, GRANTS of them so that no
 *     grant row is hot;
 *   - before each measurement, codes (i) are written straight into oauth_codes, the same rows the consent's Allow
 *     writes (the code's SHA-256, its grant, client, redirect URI, PKCE challenge, resource, scope, 60 s expiry), as
 *     many as the measurement could use at `codeRate` a second;
 *   - (j) goes along chains: each answer's refresh token is the next request's, one chain per connection at a time;
 *     before each measurement the pool of chains is topped up with new chains written as a code's redemption writes
 *     them (a measurement's end cuts the chains of the requests it leaves unanswered).
 */
const GRANTS = 100;
const REDIRECT_URI = 'http://127.0.0.1:9/callback';
const CODE_SECONDS = 60;
/** One verifier for every seeded code: what is measured is the check, not the verifier's variety. */
const VERIFIER = randomBytes(32).toString('base64url');
const CHALLENGE = createHash('sha256').update(VERIFIER).digest('base64url');

interface Grant {
  id: string;
  clientId: string;
}

export interface BenchScenario {
  options: autocannon.Options;
  /** Makes what a measurement of `seconds` uses; run before each one. */
  prepare(seconds: number): Promise<void>;
}

async function json<T>(response: Response): Promise<T> {
  if (!response.ok) throw new Error(`${response.url}: ${response.status} ${await response.text()}`);
  return (await response.json()) as T;
}

function sha256(value: string): string {
  return createHash('sha256').update(value, 'utf8').digest('hex');
}

function secret(prefix: string): string {
  return prefix + randomBytes(32).toString('base64url');
}

/** A refresh token of a new chain, as a code's redemption begins one. */
function refreshChain(): { chain: string; token: string } {
  const chain = randomUUID();
  return { chain, token: newRefreshToken(chain) };
}

const FORM = { 'content-type': 'application/x-www-form-urlencoded' };

/** Rows written straight into the server's database (SQLite beside the running server: WAL and a busy timeout). */
class RowWriter {
  constructor(private readonly env: NodeJS.ProcessEnv) {}

  async insert(table: string, columns: string[], pgTypes: string[], rows: string[][]): Promise<void> {
    const url = this.env.DATABASE_URL!;
    if (url.startsWith('sqlite:')) {
      const Database = loadBetterSqlite3();
      const db = new Database(url.slice('sqlite:'.length));
      try {
        db.pragma('busy_timeout = 10000');
        const statement = db.prepare(
          `INSERT INTO ${table} (${columns.join(', ')}) VALUES (${columns.map(() => '?').join(', ')})`,
        );
        db.transaction((all: string[][]) => {
          for (const row of all) statement.run(...row);
        })(rows);
      } finally {
        db.close();
      }
      return;
    }
    const client = new Client({ connectionString: url, options: `-c search_path=${this.env.DATABASE_SCHEMA}` });
    await client.connect();
    try {
      const arrays = columns.map((_, i) => rows.map((row) => row[i]));
      const unnest = columns.map((_, i) => `$${i + 1}::text[]`).join(', ');
      const selected = columns.map((column, i) => `u.${column}::${pgTypes[i]}`).join(', ');
      await client.query(
        `INSERT INTO ${table} (${columns.join(', ')}) SELECT ${selected} FROM unnest(${unnest}) AS u(${columns.join(', ')})`,
        arrays,
      );
    } finally {
      await client.end();
    }
  }
}

/** The grants, made through the real flow: their ids, and the first refresh token of each. */
async function makeGrants(
  base: string,
  session: Record<string, string>,
  audience: string,
): Promise<{ grants: Grant[]; refreshTokens: string[] }> {
  const grants: Grant[] = [];
  const refreshTokens: string[] = [];
  for (let i = 0; i < GRANTS; i += 1) {
    const { oauth_client: client } = await json<{ oauth_client: { client_id: string } }>(
      await fetch(`${base}/v1/organization/oauth-clients`, {
        method: 'POST',
        headers: session,
        body: JSON.stringify({ name: `bench app ${i}`, redirect_uris: [REDIRECT_URI] }),
      }),
    );
    const query = new URLSearchParams({
      response_type: 'code',
      client_id: client.client_id,
      redirect_uri: REDIRECT_URI,
      code_challenge: CHALLENGE,
      code_challenge_method: 'S256',
      resource: audience,
    });
    const started = await fetch(`${base}/oauth/authorize?${query.toString()}`, { redirect: 'manual' });
    const request = new URL(started.headers.get('location')!).searchParams.get('request');
    if (request === null) throw new Error(`authorize did not reach the consent page: ${started.status}`);
    const { redirect_to: redirectTo } = await json<{ redirect_to: string }>(
      await fetch(`${base}/v1/oauth/consent`, {
        method: 'POST',
        headers: session,
        body: JSON.stringify({ request, decision: 'allow' }),
      }),
    );
    const code = new URL(redirectTo).searchParams.get('code')!;
    const issued = await json<{ access_token: string; refresh_token: string }>(
      await fetch(`${base}/oauth/token`, {
        method: 'POST',
        headers: FORM,
        body: new URLSearchParams({
          grant_type: 'authorization_code',
          code,
          client_id: client.client_id,
          redirect_uri: REDIRECT_URI,
          code_verifier: VERIFIER,
        }),
      }),
    );
    const claims = JSON.parse(Buffer.from(issued.access_token.split('.')[1], 'base64url').toString()) as {
      grant_id: string;
    };
    grants.push({ id: claims.grant_id, clientId: client.client_id });
    refreshTokens.push(issued.refresh_token);
  }
  return { grants, refreshTokens };
}

/** (i) and (j), their grants made; `codeRate` codes a second are seeded before each measurement of (i). */
export async function codeGrantScenarios(
  base: string,
  session: Record<string, string>,
  env: NodeJS.ProcessEnv,
  options: { audience: string; connections: number; codeRate: number },
): Promise<{ authorizationCode: BenchScenario; refreshToken: BenchScenario }> {
  const { grants, refreshTokens } = await makeGrants(base, session, options.audience);
  const writer = new RowWriter(env);

  // (i): forms of fresh codes, used in turn; past the last, an unknown code (400), and a warning.
  let forms: string[] = [];
  let nextForm = 0;
  let warned = false;
  const authorizationCode: BenchScenario = {
    async prepare(seconds) {
      const count = Math.ceil(options.codeRate * seconds);
      const expiresAt = new Date(Date.now() + CODE_SECONDS * 1000).toISOString();
      const rows: string[][] = [];
      forms = [];
      nextForm = 0;
      for (let i = 0; i < count; i += 1) {
        const grant = grants[i % grants.length];
        const code = secret('gh_ac_');
        rows.push([sha256(code), grant.id, grant.clientId, REDIRECT_URI, CHALLENGE, options.audience, '', expiresAt]);
        forms.push(
          new URLSearchParams({
            grant_type: 'authorization_code',
            code,
            client_id: grant.clientId,
            redirect_uri: REDIRECT_URI,
            code_verifier: VERIFIER,
          }).toString(),
        );
      }
      await writer.insert(
        'oauth_codes',
        ['code_hash', 'grant_id', 'client_id', 'redirect_uri', 'code_challenge', 'resource', 'scope', 'expires_at'],
        ['text', 'uuid', 'text', 'text', 'text', 'text', 'text', 'timestamptz'],
        rows,
      );
    },
    options: {
      url: base,
      requests: [
        {
          method: 'POST',
          setupRequest: (req: autocannon.Request) => {
            let body = forms[nextForm++];
            if (body === undefined) {
              if (!warned) console.warn('(i) ran out of codes: raise BENCH_CODE_RATE');
              warned = true;
              body = `grant_type=authorization_code&client_id=${grants[0].clientId}&code=gh_ac_${'A'.repeat(43)}`;
            }
            return { ...req, path: '/oauth/token', headers: { ...req.headers, ...FORM }, body };
          },
        },
      ],
    },
  };

  // (j): a pool of chains' next refresh tokens, each with its client; an answer puts the next one back.
  const pool: Array<{ token: string; clientId: string }> = refreshTokens.map((token, i) => ({
    token,
    clientId: grants[i].clientId,
  }));
  const chains = Math.max(2 * options.connections, grants.length);
  const refreshToken: BenchScenario = {
    async prepare() {
      const rows: string[][] = [];
      const now = new Date().toISOString();
      for (let i = pool.length; i < chains; i += 1) {
        const grant = grants[i % grants.length];
        const { chain, token } = refreshChain();
        rows.push([chain, sha256(token), grant.id, '', now]);
        pool.push({ token, clientId: grant.clientId });
      }
      if (rows.length > 0) {
        await writer.insert(
          'oauth_refresh_chains',
          ['id', 'token_hash', 'grant_id', 'scope', 'created_at'],
          ['uuid', 'text', 'uuid', 'text', 'timestamptz'],
          rows,
        );
      }
    },
    options: {
      url: base,
      requests: [
        {
          method: 'POST',
          // The chain's client rides in the connection's context from the request to its answer.
          setupRequest: (req: autocannon.Request, context: { clientId?: string }) => {
            const next = pool.shift() ?? { token: refreshChain().token, clientId: grants[0].clientId };
            context.clientId = next.clientId;
            const body = new URLSearchParams({
              grant_type: 'refresh_token',
              refresh_token: next.token,
              client_id: next.clientId,
            }).toString();
            return { ...req, path: '/oauth/token', headers: { ...req.headers, ...FORM }, body };
          },
          onResponse: (status: number, body: string, context: { clientId?: string }) => {
            if (status !== 200 || context.clientId === undefined) return;
            const answer = JSON.parse(body) as { refresh_token: string };
            pool.push({ token: answer.refresh_token, clientId: context.clientId });
          },
        },
      ],
    },
  };
  return { authorizationCode, refreshToken };
}
