import { ChildProcess, spawn } from 'node:child_process';
import { createHash, generateKeyPairSync, KeyObject, randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { SignJWT, type JWTPayload } from 'jose';
import type { JWK } from 'oidc-provider';
import { TEST_BUILD_DIR_VARIABLE } from './build-directory';
import type { IdentityProviderConfig, IdentityProviderMessage } from './identity-provider.worker';

/** A signing key of the identity provider: its private half stays here too, so tests can sign as the provider would. */
export interface SigningKey {
  kid: string;
  privateKey: KeyObject;
  privateJwk: JWK;
}

export interface IdentityProviderOptions {
  /** The console's callback URLs the people client may redirect to (`<PUBLIC_BASE_URL>/v1/console/sso/callback`, or `…/<org>`). */
  redirectUris?: string[];
  /** Lifetime of the workload tokens (default 600 s). */
  workloadTtlSeconds?: number;
  /** Claims every workload token carries besides the standard ones. */
  workloadClaims?: Record<string, string>;
}

const START_TIMEOUT_MS = 20_000;
const MESSAGE_TIMEOUT_MS = 10_000;
const live = new Set<IdentityProvider>();

export function newSigningKey(): SigningKey {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const kid = `idp-${randomBytes(6).toString('hex')}`;
  return { kid, privateKey, privateJwk: { ...privateKey.export({ format: 'jwk' }), kid, alg: 'RS256', use: 'sig' } };
}

/**
 * node-oidc-provider as the company's identity provider (test/support/identity-provider.worker.ts), on a loopback port:
 * a people client (authorization code + PKCE, through its own development login pages) and a workload client (client
 * credentials, JWT access tokens for a resource). Keys can be rotated, the provider made to hang, stopped and started
 * again on the same port. Every one started is stopped by {@link IdentityProvider.stopAll} (afterAll), and a child
 * whose parent is gone exits by itself.
 */
export class IdentityProvider {
  readonly people = { clientId: 'gatehouse-console', clientSecret: `people-${randomBytes(12).toString('hex')}` };
  readonly workload = { clientId: 'ci-runner', clientSecret: `workload-${randomBytes(12).toString('hex')}` };
  /** The current signing key first, then the others it still publishes. */
  keys: SigningKey[] = [newSigningKey()];
  issuer = '';
  output = '';
  private child: ChildProcess | undefined;
  private exited: Promise<void> = Promise.resolve();
  private messages = 0;

  private constructor(private readonly options: IdentityProviderOptions) {}

  static async start(options: IdentityProviderOptions = {}): Promise<IdentityProvider> {
    const provider = new IdentityProvider(options);
    live.add(provider);
    await provider.spawn(0);
    return provider;
  }

  static async stopAll(): Promise<void> {
    await Promise.all([...live].map((provider) => provider.stop()));
  }

  get tokenEndpoint(): string {
    return `${this.issuer}/token`;
  }

  /** Client credentials for `resource`: the provider's JWT access token, as a workload would get one. */
  async workloadToken(resource: string): Promise<string> {
    const response = await fetch(this.tokenEndpoint, {
      method: 'POST',
      headers: { authorization: basic(this.workload.clientId, this.workload.clientSecret) },
      body: new URLSearchParams({ grant_type: 'client_credentials', resource }),
    });
    const body = (await response.json()) as { access_token?: string };
    if (response.status !== 200 || body.access_token === undefined) {
      throw new Error(`client credentials: ${response.status} ${JSON.stringify(body)}`);
    }
    return body.access_token;
  }

  /**
   * A person signs in through the provider's own pages (any login and password) and consents: the authorization
   * response's URL at `redirectUri` (with `code`, `state` and `iss`), as the browser would be sent there.
   */
  async authorize(options: {
    login: string;
    redirectUri: string;
    state: string;
    nonce: string;
    codeChallenge: string;
    scope?: string;
  }): Promise<URL> {
    const cookies = new Map<string, string>();
    let url = new URL(`${this.issuer}/auth`);
    url.search = new URLSearchParams({
      client_id: this.people.clientId,
      response_type: 'code',
      redirect_uri: options.redirectUri,
      scope: options.scope ?? 'openid email profile',
      state: options.state,
      nonce: options.nonce,
      code_challenge: options.codeChallenge,
      code_challenge_method: 'S256',
    }).toString();
    let form: URLSearchParams | undefined;
    for (let step = 0; step < 12; step += 1) {
      const response = await fetch(url, {
        method: form === undefined ? 'GET' : 'POST',
        redirect: 'manual',
        headers: { cookie: [...cookies].map(([name, value]) => `${name}=${value}`).join('; ') },
        body: form,
      });
      for (const line of response.headers.getSetCookie()) {
        const [pair] = line.split(';');
        const at = pair.indexOf('=');
        if (/expires=Thu, 01 Jan 1970/i.test(line)) cookies.delete(pair.slice(0, at));
        else cookies.set(pair.slice(0, at), pair.slice(at + 1));
      }
      form = undefined;
      const location = response.headers.get('location');
      if (location !== null) {
        url = new URL(location, url);
        if (url.href.startsWith(options.redirectUri)) return url;
        continue;
      }
      const page = await response.text();
      const action = /<form[^>]* action="([^"]+)"/.exec(page)?.[1];
      const prompt = /name="prompt" value="([a-z]+)"/.exec(page)?.[1];
      if (response.status !== 200 || action === undefined || prompt === undefined) {
        throw new Error(`sign-in at ${url.href}: ${response.status} ${page.slice(0, 500)}`);
      }
      url = new URL(action, url);
      form = new URLSearchParams(
        prompt === 'login' ? { prompt, login: options.login, password: 'any password' } : { prompt },
      );
    }
    throw new Error('sign-in: too many redirects');
  }

  /** An ID token for `login`: the whole code flow with PKCE, and the code exchanged with the people client's secret. */
  async idToken(login: string, redirectUri: string, nonce = randomBytes(8).toString('hex')): Promise<string> {
    const verifier = randomBytes(32).toString('base64url');
    const state = randomBytes(8).toString('hex');
    const callback = await this.authorize({
      login,
      redirectUri,
      state,
      nonce,
      codeChallenge: createHash('sha256').update(verifier).digest('base64url'),
    });
    const code = callback.searchParams.get('code');
    if (code === null || callback.searchParams.get('state') !== state) throw new Error(`callback ${callback.href}`);
    const response = await fetch(this.tokenEndpoint, {
      method: 'POST',
      headers: { authorization: basic(this.people.clientId, this.people.clientSecret) },
      body: new URLSearchParams({
        grant_type: 'authorization_code',
        code,
        redirect_uri: redirectUri,
        code_verifier: verifier,
      }),
    });
    const body = (await response.json()) as { id_token?: string };
    if (response.status !== 200 || body.id_token === undefined) {
      throw new Error(`code exchange: ${response.status} ${JSON.stringify(body)}`);
    }
    return body.id_token;
  }

  /** A JWT signed with the provider's current key (or `key`), with exactly these claims: what a skewed IdP would issue. */
  sign(claims: JWTPayload, options: { key?: SigningKey; kid?: string; typ?: string } = {}): Promise<string> {
    const key = options.key ?? this.keys[0];
    return new SignJWT(claims)
      .setProtectedHeader({ alg: 'RS256', kid: options.kid ?? key.kid, ...(options.typ ? { typ: options.typ } : {}) })
      .sign(key.privateKey);
  }

  /** A new signing key (or `key`); the previous ones stay published when `keepPrevious` (else they are gone at once). */
  async rotateSigningKey(options: { keepPrevious: boolean; key?: SigningKey }): Promise<SigningKey> {
    const key = options.key ?? newSigningKey();
    this.keys = options.keepPrevious ? [key, ...this.keys] : [key];
    await this.send({ type: 'jwks', keys: this.keys.map((k) => k.privateJwk) });
    return key;
  }

  /** Connections are accepted and never answered (true), or answered again (false). */
  setUnresponsive(value: boolean): Promise<void> {
    return this.send({ type: 'unresponsive', value });
  }

  async stop(): Promise<void> {
    this.child?.kill('SIGKILL');
    await this.exited;
  }

  /** Started again on the same port, with the same keys and clients. */
  async restart(): Promise<void> {
    await this.stop();
    live.add(this);
    await this.spawn(Number(new URL(this.issuer).port));
  }

  private async spawn(port: number): Promise<void> {
    const buildDir = process.env[TEST_BUILD_DIR_VARIABLE];
    if (buildDir === undefined) throw new Error(`${TEST_BUILD_DIR_VARIABLE} is not set: run through Jest`);
    const config: IdentityProviderConfig = {
      port,
      keys: this.keys.map((key) => key.privateJwk),
      clients: {
        people: { id: this.people.clientId, secret: this.people.clientSecret, redirectUris: this.redirectUris },
        workload: {
          id: this.workload.clientId,
          secret: this.workload.clientSecret,
          ttlSeconds: this.options.workloadTtlSeconds ?? 600,
          claims: this.options.workloadClaims ?? {},
        },
      },
    };
    const child = spawn(process.execPath, [join(buildDir, 'test-support', 'identity-provider.worker.js')], {
      env: { PATH: process.env.PATH, IDP_CONFIG: JSON.stringify(config) },
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
    });
    this.child = child;
    this.exited = new Promise((resolve) =>
      child.once('exit', () => {
        live.delete(this);
        resolve();
      }),
    );
    child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (this.output += chunk));
    const ready = new Promise<string>((resolve, reject) => {
      let lines = '';
      child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
        lines += chunk;
        const first = lines.split('\n')[0];
        if (lines.includes('\n')) resolve((JSON.parse(first) as { issuer: string }).issuer);
      });
      child.once('exit', (code, signal) =>
        reject(new Error(`identity provider exited (${code ?? signal}) before it was ready: ${this.output}`)),
      );
      setTimeout(() => reject(new Error(`identity provider not ready: ${this.output}`)), START_TIMEOUT_MS).unref();
    });
    try {
      this.issuer = await ready;
    } catch (error) {
      child.kill('SIGKILL');
      throw error;
    }
  }

  private get redirectUris(): string[] {
    return this.options.redirectUris ?? ['http://127.0.0.1/v1/console/sso/callback/acme'];
  }

  private send(message: Omit<IdentityProviderMessage, 'id'> & Partial<IdentityProviderMessage>): Promise<void> {
    const child = this.child;
    if (child === undefined || child.exitCode !== null) return Promise.reject(new Error('identity provider stopped'));
    const id = ++this.messages;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`identity provider: no answer to ${message.type}`)),
        MESSAGE_TIMEOUT_MS,
      );
      const listener = (answer: { type: string; id: number }) => {
        if (answer.type !== 'done' || answer.id !== id) return;
        clearTimeout(timer);
        child.off('message', listener);
        resolve();
      };
      child.on('message', listener);
      child.send({ ...message, id });
    });
  }
}

function basic(id: string, secret: string): string {
  return `Basic ${Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString('base64')}`;
}
