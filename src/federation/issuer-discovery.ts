import { PrivateNetworks } from '../common/address-rules';
import { describeFetchError, fetchBounded } from './bounded-fetch';
import { endpointProblem, insecureUrlProblem, IssuerProblem } from './issuer-url';
import type { IssuerKind, TokenEndpointAuthMethod } from './trusted-issuer.entity';
import { ALLOWED_ALGORITHMS } from './subject-token-rules';

/** What Gatehouse uses of an issuer's metadata (OpenID Connect Discovery 1.0, RFC 8414). */
export interface IssuerMetadata {
  issuer: string;
  jwksUri: string;
  authorizationEndpoint?: string;
  tokenEndpoint?: string;
  tokenEndpointAuthMethods: string[];
  /** Absent when the document does not say (an OAuth 2.0 authorization server's). */
  idTokenSigningAlgs?: string[];
  /**
   * `authorization_response_iss_parameter_supported` (RFC 9207 section 3, absent: false): the issuer names itself in
   * its authorization responses, so that one without `iss` is refused (section 2.4).
   */
  issParameterSupported: boolean;
  /** The document's address. */
  documentUrl: string;
}

export interface DiscoveryOptions {
  production: boolean;
  timeoutMs: number;
  /** The origins besides the issuer's own where its key set and endpoints may be (`--allow-origin`). */
  allowedOrigins: readonly string[];
  /** Private networks identity providers may be on (IDENTITY_PROVIDER_NETWORKS). */
  privateNetworks?: PrivateNetworks;
}

/**
 * Why an issuer cannot be used, naming the URL and the cause; `foreignOrigin`: the origin of an endpoint that is on
 * neither the issuer's origin nor an allowed one, when that is the cause.
 */
export class DiscoveryError extends Error {
  constructor(
    message: string,
    readonly foreignOrigin?: string,
  ) {
    super(message);
  }
}

const MAX_DOCUMENT_BYTES = 64 * 1024;

/**
 * The documents tried in turn: OpenID Connect's (appended to the issuer), then RFC 8414's (inserted between the host
 * and the path; the same URL as appending when the issuer has no path). The second is asked only when the first
 * answered without a document: an issuer that cannot be reached is not asked twice.
 */
export function discoveryUrls(issuer: string): string[] {
  const url = new URL(issuer);
  const path = url.pathname === '/' ? '' : url.pathname.replace(/\/$/, '');
  return [
    `${issuer.replace(/\/$/, '')}/.well-known/openid-configuration`,
    `${url.origin}/.well-known/oauth-authorization-server${path}`,
  ];
}

/** Fetches and checks the issuer's metadata: its `issuer` must equal `issuer` exactly. Rejects with DiscoveryError. */
export async function discoverIssuer(issuer: string, options: DiscoveryOptions): Promise<IssuerMetadata> {
  const schemeProblem = insecureUrlProblem(issuer, options.production, options.privateNetworks);
  if (schemeProblem !== null) throw new DiscoveryError(`the issuer ${issuer} ${schemeProblem}`);
  const answers: string[] = [];
  for (const documentUrl of discoveryUrls(issuer)) {
    let answer;
    try {
      answer = await fetchBounded(documentUrl, {
        timeoutMs: options.timeoutMs,
        maxBytes: MAX_DOCUMENT_BYTES,
        accept: 'application/json',
        allowLoopback: !options.production,
        privateNetworks: options.privateNetworks,
      });
    } catch (error) {
      throw new DiscoveryError(`cannot fetch ${documentUrl}: ${describeFetchError(error, options.timeoutMs)}`);
    }
    if (answer.status !== 200) {
      answers.push(`${documentUrl} answered ${answer.status}`);
      continue;
    }
    let document: unknown;
    try {
      document = JSON.parse(answer.body.toString('utf8'));
    } catch {
      answers.push(`${documentUrl} answered with something that is not JSON`);
      continue;
    }
    return metadataFrom(document, issuer, documentUrl, options);
  }
  throw new DiscoveryError(`no discovery document for the issuer ${issuer}: ${answers.join(', ')}`);
}

function metadataFrom(
  document: unknown,
  issuer: string,
  documentUrl: string,
  options: DiscoveryOptions,
): IssuerMetadata {
  if (typeof document !== 'object' || document === null || Array.isArray(document)) {
    throw new DiscoveryError(`the discovery document at ${documentUrl} is not a JSON object`);
  }
  const fields = document as Record<string, unknown>;
  if (fields.issuer !== issuer) {
    const named = typeof fields.issuer === 'string' ? JSON.stringify(fields.issuer) : 'no issuer';
    throw new DiscoveryError(
      `the discovery document at ${documentUrl} names ${named}, not "${issuer}" (they must be equal, character for character)`,
    );
  }
  const jwksUri = fields.jwks_uri;
  if (typeof jwksUri !== 'string') throw new DiscoveryError(`the discovery document at ${documentUrl} has no jwks_uri`);
  const jwksProblem = endpointProblem(jwksUri, issuer, options);
  if (jwksProblem !== null) {
    throw new DiscoveryError(
      `the jwks_uri ${jwksUri} of ${documentUrl} ${jwksProblem.text}`,
      jwksProblem.foreignOrigin,
    );
  }
  const strings = (value: unknown): string[] | undefined =>
    Array.isArray(value) ? value.filter((item): item is string => typeof item === 'string') : undefined;
  const text = (value: unknown): string | undefined => (typeof value === 'string' ? value : undefined);
  return {
    issuer,
    jwksUri,
    authorizationEndpoint: text(fields.authorization_endpoint),
    tokenEndpoint: text(fields.token_endpoint),
    // RFC 8414 section 2: absent means client_secret_basic.
    tokenEndpointAuthMethods: strings(fields.token_endpoint_auth_methods_supported) ?? ['client_secret_basic'],
    idTokenSigningAlgs: strings(fields.id_token_signing_alg_values_supported),
    issParameterSupported: fields.authorization_response_iss_parameter_supported === true,
    documentUrl,
  };
}

/**
 * Why the issuer cannot serve as `kind`, or null. People sign in through it (console single sign-on): it needs the
 * two endpoints (on the issuer's origin or an allowed one, as its key set), the client authentication asked for, and
 * an ID token algorithm Gatehouse accepts.
 */
export function metadataProblem(
  metadata: IssuerMetadata,
  kind: IssuerKind,
  tokenEndpointAuth: TokenEndpointAuthMethod | null,
  options: Pick<DiscoveryOptions, 'production' | 'allowedOrigins' | 'privateNetworks'>,
): IssuerProblem | null {
  if (kind === 'workloads') return null;
  const where = `the discovery document at ${metadata.documentUrl}`;
  for (const [name, value] of [
    ['authorization_endpoint', metadata.authorizationEndpoint],
    ['token_endpoint', metadata.tokenEndpoint],
  ] as const) {
    if (value === undefined) return new IssuerProblem(`${where} has no ${name}, which single sign-on needs`);
    const problem = endpointProblem(value, metadata.issuer, options);
    if (problem !== null) {
      return new IssuerProblem(
        `the ${name} ${value} of ${metadata.documentUrl} ${problem.text}`,
        problem.foreignOrigin,
      );
    }
  }
  if (tokenEndpointAuth !== null && !metadata.tokenEndpointAuthMethods.includes(tokenEndpointAuth)) {
    return new IssuerProblem(
      `${where} does not support ${tokenEndpointAuth} (token_endpoint_auth_methods_supported: ${metadata.tokenEndpointAuthMethods.join(', ')})`,
    );
  }
  const algs = metadata.idTokenSigningAlgs;
  if (algs !== undefined && !algs.some((alg) => (ALLOWED_ALGORITHMS as readonly string[]).includes(alg))) {
    return new IssuerProblem(
      `${where} signs ID tokens with ${algs.join(', ')}; Gatehouse accepts ${ALLOWED_ALGORITHMS.join(', ')}`,
    );
  }
  return null;
}
