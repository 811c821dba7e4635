import { randomBytes } from 'node:crypto';
import { createServer, IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Configuration, JWK, Provider } from 'oidc-provider';

/**
 * The company's identity provider in tests: node-oidc-provider in a process of its own (it is ESM only; Jest runs
 * CommonJS), compiled by global-setup and started by identity-provider.ts. Its configuration comes in IDP_CONFIG (JSON);
 * it prints one line `{"issuer":"http://127.0.0.1:<port>"}` once it listens, and answers IPC messages:
 *   { type: 'jwks', keys }          sign with these private keys from now on (the first one) and publish them all
 *   { type: 'unresponsive', value } accept connections but answer nothing (an issuer that hangs), or answer again
 * each acknowledged with { type: 'done', id }. It exits when its parent goes away (the IPC channel closes).
 */
export interface IdentityProviderConfig {
  /** 0 (or absent): any free loopback port. */
  port?: number;
  keys: JWK[];
  clients: {
    /** The console's single sign-on: authorization code with PKCE, ID tokens signed RS256. */
    people: { id: string; secret: string; redirectUris: string[] };
    /** Client credentials for a resource: JWT access tokens whose aud is the resource (the workload tokens). */
    workload: { id: string; secret: string; ttlSeconds: number; claims: Record<string, string> };
  };
}

export type IdentityProviderMessage =
  { id: number; type: 'jwks'; keys: JWK[] } | { id: number; type: 'unresponsive'; value: boolean };

const config = JSON.parse(process.env.IDP_CONFIG ?? '{}') as IdentityProviderConfig;
const cookieKeys = [randomBytes(32).toString('base64url')];
let keys = config.keys;
let issuer = '';
let handle: (req: IncomingMessage, res: ServerResponse) => unknown = (_req, res) => res.writeHead(503).end();
let unresponsive = false;
const held = new Set<ServerResponse>();

function configuration(): Configuration {
  const { people, workload } = config.clients;
  return {
    clients: [
      {
        client_id: people.id,
        client_secret: people.secret,
        redirect_uris: people.redirectUris,
        grant_types: ['authorization_code'],
        response_types: ['code'],
        token_endpoint_auth_method: 'client_secret_basic',
        id_token_signed_response_alg: 'RS256',
      },
      {
        client_id: workload.id,
        client_secret: workload.secret,
        grant_types: ['client_credentials'],
        redirect_uris: [],
        response_types: [],
        token_endpoint_auth_method: 'client_secret_basic',
      },
    ],
    jwks: { keys },
    cookies: { keys: cookieKeys },
    claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'] },
    // The scope's claims in the ID token too, as Okta, Entra ID and Google put them there (the console reads `email`).
    conformIdTokenClaims: false,
    // Any login signs in (its dev interactions): the login is the subject, and the e-mail address when it has an @.
    findAccount: (_ctx, sub) => ({
      accountId: sub,
      claims: () => ({
        sub,
        email: sub.includes('@') ? sub : `${sub}@people.example`,
        email_verified: true,
        name: sub,
      }),
    }),
    pkce: { required: () => true },
    features: {
      devInteractions: { enabled: true },
      clientCredentials: { enabled: true },
      resourceIndicators: {
        enabled: true,
        getResourceServerInfo: () => ({
          scope: 'workload',
          accessTokenFormat: 'jwt',
          accessTokenTTL: workload.ttlSeconds,
          jwt: { sign: { alg: 'RS256' } },
        }),
      },
    },
    // What a CI platform puts in its tokens (GitHub Actions: repository, ref, environment).
    extraTokenClaims: (_ctx, token) => (token.clientId === workload.id ? workload.claims : undefined),
  };
}

const server = createServer((req, res) => {
  if (unresponsive) {
    held.add(res);
    res.on('close', () => held.delete(res));
    return;
  }
  void handle(req, res);
});

server.listen(config.port ?? 0, '127.0.0.1', () => {
  issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  handle = new Provider(issuer, configuration()).callback();
  process.stdout.write(`${JSON.stringify({ issuer })}\n`);
});

process.on('message', (message: IdentityProviderMessage) => {
  switch (message.type) {
    case 'jwks':
      keys = message.keys;
      handle = new Provider(issuer, configuration()).callback();
      break;
    case 'unresponsive':
      unresponsive = message.value;
      if (!unresponsive) for (const res of held) res.destroy();
      break;
  }
  process.send!({ type: 'done', id: message.id });
});
process.on('disconnect', () => process.exit(0));
