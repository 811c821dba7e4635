import { createServer, request, Server } from 'node:http';
import { pairs, RawHeaders } from './gateways';
import type { YamlValue } from './yaml-subset';

/**
 * Traefik's ForwardAuth and Envoy's HTTP ext_authz, reproduced from their sources for the gateway tests (neither is a
 * Debian package): a loopback HTTP server that reads the configuration of docs/resource-servers.md, sends Gatehouse
 * the request that gateway builds from it (the same method, URL and headers), and passes the client's request on to
 * the upstream with the headers the gateway would set, or answers as the gateway would. Only the fields those blocks
 * use are understood; any other throws, so that a change to the docs cannot be half reproduced.
 *
 * - Traefik v3 (pkg/middlewares/auth/forward.go): a GET to `address` as written; the client's headers, filtered by
 *   `authRequestHeaders`, and X-Forwarded-For/-Method/-Proto/-Port/-Host/-Uri (the client's path and query); a 2xx
 *   lets the request through after `authResponseHeaders` / `authResponseHeadersRegex`, anything else is the answer.
 *   Header names are Go's canonical ones (net/textproto), as Traefik's regex sees them.
 * - Envoy (source/extensions/filters/common/ext_authz/ext_authz_http_impl.cc): the client's method, `path_prefix`
 *   followed by the client's whole path and query, `Host`, `Authorization` and the `allowed_headers`,
 *   `Content-Length: 0`; a 200 lets the request through, `allowed_upstream_headers` replacing the request's headers of
 *   the same name; a 5xx or no answer is 403; any other status is the answer. The http_filters run in order
 *   (header_mutation, ext_authz, router), on header names in lower case, as Envoy keeps them.
 */

export interface AuthRequest {
  method: string;
  /** The request target as sent: path and query. */
  path: string;
  headers: RawHeaders;
}

export interface EmulatedGateway {
  port: number;
  /** Every request sent to Gatehouse, as sent. */
  authRequests: AuthRequest[];
  close(): Promise<void>;
}

interface Answer {
  status: number;
  headers: RawHeaders;
  body: string;
}

type Outcome = { pass: true; headers: RawHeaders } | { pass: false; answer: Answer };

/** What a gateway does with one client request, given a way to call Gatehouse. */
type Decide = (
  client: { method: string; url: string; headers: RawHeaders; remoteAddress: string },
  call: (url: string, request: Omit<AuthRequest, 'path'>) => Promise<Answer>,
) => Promise<Outcome>;

export function startTraefik(dynamicConfig: YamlValue, upstreamPort: number): Promise<EmulatedGateway> {
  return startEmulation(traefik(dynamicConfig), upstreamPort);
}

export function startEnvoy(httpFilters: YamlValue, upstreamPort: number): Promise<EmulatedGateway> {
  return startEmulation(envoy(httpFilters), upstreamPort);
}

async function startEmulation(decide: Decide, upstreamPort: number): Promise<EmulatedGateway> {
  const authRequests: AuthRequest[] = [];
  const call = (url: string, sent: Omit<AuthRequest, 'path'>): Promise<Answer> => {
    const target = new URL(url);
    if (target.protocol !== 'http:') throw new Error(`unsupported ${url}`);
    const path = url.slice(url.indexOf(target.host) + target.host.length) || '/';
    authRequests.push({ ...sent, path });
    return exchange(target.hostname, Number(target.port || 80), sent.method, path, sent.headers);
  };
  const server: Server = createServer((incoming, response) => {
    incoming.resume();
    const client = {
      method: incoming.method!,
      url: incoming.url!,
      headers: pairs(incoming.rawHeaders),
      remoteAddress: incoming.socket.remoteAddress ?? '',
    };
    decide(client, call)
      .then(async (outcome) => {
        const answer = outcome.pass
          ? await exchange('127.0.0.1', upstreamPort, client.method, client.url, outcome.headers)
          : outcome.answer;
        response.writeHead(answer.status, answer.headers.flat());
        response.end(answer.body);
      })
      .catch((error: unknown) => {
        response.writeHead(599, { 'content-type': 'text/plain' });
        response.end(`emulation failed: ${String(error)}`);
      });
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  return {
    port: (server.address() as { port: number }).port,
    authRequests,
    close: () => new Promise<void>((ok) => (server.listening ? server.close(() => ok()) : ok())),
  };
}

const HOP_BY_HOP = ['connection', 'keep-alive', 'proxy-connection', 'te', 'trailer', 'transfer-encoding', 'upgrade'];

function exchange(host: string, port: number, method: string, path: string, headers: RawHeaders): Promise<Answer> {
  const sent = headers.filter(([name]) => !HOP_BY_HOP.includes(name.toLowerCase()));
  return new Promise((ok, fail) => {
    const outgoing = request({ host, port, method, path, headers: sent.flat(), agent: false }, (response) => {
      let body = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => (body += chunk));
      response.on('end', () =>
        ok({
          status: response.statusCode!,
          headers: pairs(response.rawHeaders).filter(([name]) => !HOP_BY_HOP.includes(name.toLowerCase())),
          body,
        }),
      );
    });
    outgoing.on('error', fail);
    outgoing.end();
  });
}

// ---------------------------------------------------------------------------------------------------------------
// Reading the configuration

type Node = { [key: string]: YamlValue };

function object(value: YamlValue | undefined, where: string): Node {
  if (value === null || value === undefined || typeof value !== 'object' || Array.isArray(value)) {
    throw new Error(`${where}: expected a mapping`);
  }
  return value;
}

function list(value: YamlValue | undefined, where: string): YamlValue[] {
  if (!Array.isArray(value)) throw new Error(`${where}: expected a list`);
  return value;
}

function text(value: YamlValue | undefined, where: string): string {
  if (typeof value !== 'string') throw new Error(`${where}: expected a string`);
  return value;
}

/** The mapping at `where`, refusing any key not in `known`. */
function fields(value: YamlValue | undefined, where: string, known: string[]): Node {
  const node = object(value, where);
  const unknown = Object.keys(node).filter((key) => !known.includes(key));
  if (unknown.length > 0) throw new Error(`${where}: not reproduced: ${unknown.join(', ')}`);
  return node;
}

// ---------------------------------------------------------------------------------------------------------------
// Traefik

/** Go's http.CanonicalHeaderKey: `x-gatehouse-user-id` -> `X-Gatehouse-User-Id`; names with bytes outside a token as is. */
export function goCanonicalKey(name: string): string {
  if (!/^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/.test(name)) return name;
  return name
    .toLowerCase()
    .replace(/(^|-)([a-z])/g, (_match, dash: string, letter: string) => dash + letter.toUpperCase());
}

/** Go's http.Header: canonical names, values in order. */
class GoHeader {
  readonly map = new Map<string, string[]>();

  constructor(raw: RawHeaders = []) {
    for (const [name, value] of raw) this.add(name, value);
  }

  add(name: string, value: string): void {
    const key = goCanonicalKey(name);
    this.map.set(key, [...(this.map.get(key) ?? []), value]);
  }

  set(name: string, value: string): void {
    this.map.set(goCanonicalKey(name), [value]);
  }

  del(name: string): void {
    this.map.delete(goCanonicalKey(name));
  }

  has(name: string): boolean {
    return this.map.has(goCanonicalKey(name));
  }

  raw(): RawHeaders {
    return [...this.map].flatMap(([name, values]) => values.map((value): [string, string] => [name, value]));
  }
}

/** An RE2 expression as Traefik compiles it (Go regexp): only a leading `(?i)` is translated. */
function goRegexp(expression: string): RegExp {
  const insensitive = expression.startsWith('(?i)');
  const body = insensitive ? expression.slice(4) : expression;
  if (body.includes('(?')) throw new Error(`authResponseHeadersRegex: flags not reproduced: ${expression}`);
  return new RegExp(body, insensitive ? 'i' : '');
}

const X_FORWARDED = [
  'X-Forwarded-For',
  'X-Forwarded-Proto',
  'X-Forwarded-Host',
  'X-Forwarded-Port',
  'X-Forwarded-Server',
  'X-Forwarded-Uri',
  'X-Forwarded-Method',
  'X-Forwarded-Prefix',
  'X-Forwarded-Tls-Client-Cert',
  'X-Forwarded-Tls-Client-Cert-Info',
  'X-Real-Ip',
];

function traefik(config: YamlValue): Decide {
  const http = object(object(config, 'traefik').http, 'http');
  const middlewares = object(http.middlewares, 'http.middlewares');
  const routers = Object.entries(object(http.routers, 'http.routers')).map(([name, value]) => {
    const router = fields(value, `router ${name}`, ['rule', 'middlewares', 'service']);
    const rule = text(router.rule, `router ${name}.rule`);
    const prefix = /^PathPrefix\(`([^`]*)`\)$/.exec(rule)?.[1];
    if (prefix === undefined) throw new Error(`router ${name}: rule not reproduced: ${rule}`);
    const forwardAuths = list(router.middlewares ?? [], `router ${name}.middlewares`).map((middleware) => {
      const id = text(middleware, `router ${name}.middlewares`);
      return fields(object(middlewares[id], `middleware ${id}`).forwardAuth, `middleware ${id}.forwardAuth`, [
        'address',
        'trustForwardHeader',
        'authRequestHeaders',
        'authResponseHeaders',
        'authResponseHeadersRegex',
        'maxResponseBodySize',
        'preserveRequestMethod',
      ]);
    });
    // Traefik's default priority is the rule's length: the longest rule wins.
    return { prefix, priority: rule.length, forwardAuths };
  });

  return async (client, call) => {
    const path = client.url.split('?')[0];
    const router = routers
      .filter((candidate) => path.startsWith(candidate.prefix))
      .sort((a, b) => b.priority - a.priority)[0];
    if (router === undefined) return { pass: false, answer: { status: 404, headers: [], body: '404 page not found' } };
    const host = client.headers.find(([name]) => name.toLowerCase() === 'host')?.[1] ?? '';
    const request = new GoHeader(client.headers.filter(([name]) => name.toLowerCase() !== 'host'));
    for (const forwardAuth of router.forwardAuths) {
      const sent = forwardHeaders(forwardAuth, request, { ...client, host });
      const answer = await call(text(forwardAuth.address, 'forwardAuth.address'), {
        method: forwardAuth.preserveRequestMethod === true ? client.method : 'GET',
        headers: [['Host', new URL(text(forwardAuth.address, 'address')).host], ...sent.raw()],
      });
      if (answer.status < 200 || answer.status >= 300) {
        return { pass: false, answer: { ...answer, headers: new GoHeader(answer.headers).raw() } };
      }
      const response = new GoHeader(answer.headers);
      for (const name of forwardAuth.authResponseHeaders === undefined
        ? []
        : list(forwardAuth.authResponseHeaders, 'authResponseHeaders')) {
        request.del(text(name, 'authResponseHeaders'));
        for (const value of response.map.get(goCanonicalKey(text(name, 'authResponseHeaders'))) ?? []) {
          request.add(text(name, 'authResponseHeaders'), value);
        }
      }
      if (forwardAuth.authResponseHeadersRegex !== undefined) {
        const pattern = goRegexp(text(forwardAuth.authResponseHeadersRegex, 'authResponseHeadersRegex'));
        for (const key of [...request.map.keys()]) if (pattern.test(key)) request.map.delete(key);
        for (const [key, values] of response.map) if (pattern.test(key)) request.map.set(key, [...values]);
      }
    }
    return { pass: true, headers: [['Host', host], ...request.raw()] };
  };
}

/** writeHeader (trustForwardHeader set) or oldWriteHeader (unset) of forward.go. */
function forwardHeaders(
  forwardAuth: Node,
  request: GoHeader,
  client: { method: string; url: string; host: string; remoteAddress: string },
): GoHeader {
  let sent = new GoHeader(request.raw().filter(([name]) => !HOP_BY_HOP.includes(name.toLowerCase())));
  const trust = forwardAuth.trustForwardHeader;
  if (trust === false) for (const name of X_FORWARDED) sent.del(name);
  const allowed =
    forwardAuth.authRequestHeaders === undefined ? [] : list(forwardAuth.authRequestHeaders, 'authRequestHeaders');
  if (trust === true && allowed.length > 0) allowed.push(...X_FORWARDED);
  if (allowed.length > 0) {
    const filtered = new GoHeader();
    for (const name of allowed) {
      for (const value of sent.map.get(goCanonicalKey(text(name, 'authRequestHeaders'))) ?? []) {
        filtered.add(text(name, 'authRequestHeaders'), value);
      }
    }
    sent = filtered;
  }
  const setUnlessTrusted = (name: string, value: string) => {
    if (trust === undefined || !sent.has(name)) sent.set(name, value);
  };
  const prior = trust === true ? sent.map.get('X-Forwarded-For') : undefined;
  sent.set('X-Forwarded-For', [...(prior ?? []), client.remoteAddress.replace(/^::ffff:/, '')].join(', '));
  setUnlessTrusted('X-Forwarded-Method', client.method);
  setUnlessTrusted('X-Forwarded-Proto', 'http');
  if (trust !== undefined && !sent.has('X-Forwarded-Port')) sent.set('X-Forwarded-Port', '80');
  setUnlessTrusted('X-Forwarded-Host', client.host);
  setUnlessTrusted('X-Forwarded-Uri', client.url);
  return sent;
}

// ---------------------------------------------------------------------------------------------------------------
// Envoy

/** Envoy's StringMatcher (type.matcher.v3), on a header name in lower case. */
function stringMatcher(value: YamlValue, where: string): (name: string) => boolean {
  const matcher = fields(value, where, ['exact', 'prefix', 'suffix', 'contains', 'safe_regex', 'ignore_case']);
  const fold = matcher.ignore_case === true ? (s: string) => s.toLowerCase() : (s: string) => s;
  if (matcher.exact !== undefined) return (name) => fold(name) === fold(text(matcher.exact, where));
  if (matcher.prefix !== undefined) return (name) => fold(name).startsWith(fold(text(matcher.prefix, where)));
  if (matcher.suffix !== undefined) return (name) => fold(name).endsWith(fold(text(matcher.suffix, where)));
  if (matcher.contains !== undefined) return (name) => fold(name).includes(fold(text(matcher.contains, where)));
  if (matcher.safe_regex !== undefined) {
    const regex = text(fields(matcher.safe_regex, `${where}.safe_regex`, ['regex']).regex, `${where}.safe_regex`);
    // RE2 matches the whole name (FullMatch), as Envoy's RegexMatcher does.
    const expression = new RegExp(`^(?:${regex})$`);
    return (name) => expression.test(name);
  }
  throw new Error(`${where}: no matcher`);
}

/** A ListStringMatcher (`patterns: [...]`), or one that matches nothing when absent. */
function listMatcher(value: YamlValue | undefined, where: string): (name: string) => boolean {
  if (value === undefined) return () => false;
  const matchers = list(fields(value, where, ['patterns']).patterns, `${where}.patterns`).map((pattern) =>
    stringMatcher(pattern, `${where}.patterns`),
  );
  return (name) => matchers.some((matches) => matches(name));
}

function envoy(config: YamlValue): Decide {
  const filters = list(object(config, 'envoy').http_filters, 'http_filters').map((value, index) => {
    const filter = fields(value, `http_filters[${index}]`, ['name', 'typed_config']);
    return {
      name: text(filter.name, `http_filters[${index}].name`),
      config: object(filter.typed_config, 'typed_config'),
    };
  });
  if (filters.at(-1)?.name !== 'envoy.filters.http.router') throw new Error('http_filters: the router must be last');

  const steps = filters.slice(0, -1).map(({ name, config: typed }) => {
    if (name === 'envoy.filters.http.header_mutation') return headerMutation(typed);
    if (name === 'envoy.filters.http.ext_authz') return extAuthz(typed);
    throw new Error(`http_filters: ${name} not reproduced`);
  });

  return async (client, call) => {
    // Envoy's HTTP/1 codec keeps header names in lower case; `host` is the :authority.
    let headers: RawHeaders = client.headers.map(([name, value]) => [name.toLowerCase(), value]);
    for (const step of steps) {
      const outcome = await step({ ...client, headers }, call);
      if (!outcome.pass) return outcome;
      headers = outcome.headers;
    }
    return { pass: true, headers };
  };
}

function headerMutation(typed: Node): Decide {
  const mutations = fields(typed.mutations, 'header_mutation.mutations', ['request_mutations']);
  const removals = list(mutations.request_mutations, 'request_mutations').map((value, index) => {
    const where = `request_mutations[${index}]`;
    const mutation = fields(value, where, ['remove', 'remove_on_match']);
    if (mutation.remove !== undefined) {
      const name = text(mutation.remove, where).toLowerCase();
      return (header: string) => header === name;
    }
    const onMatch = fields(mutation.remove_on_match, `${where}.remove_on_match`, ['key_matcher']);
    return stringMatcher(onMatch.key_matcher, `${where}.remove_on_match.key_matcher`);
  });
  return (client) =>
    Promise.resolve({
      pass: true,
      headers: client.headers.filter(([name]) => !removals.some((remove) => remove(name))),
    });
}

function extAuthz(typed: Node): Decide {
  const config = fields(typed, 'ext_authz', ['@type', 'transport_api_version', 'http_service', 'allowed_headers']);
  const service = fields(config.http_service, 'http_service', [
    'server_uri',
    'path_prefix',
    'authorization_request',
    'authorization_response',
  ]);
  const uri = text(fields(service.server_uri, 'server_uri', ['uri', 'cluster', 'timeout']).uri, 'server_uri.uri');
  const prefix = service.path_prefix === undefined ? '' : text(service.path_prefix, 'path_prefix');
  const authorizationRequest = fields(service.authorization_request ?? {}, 'authorization_request', [
    'allowed_headers',
    'headers_to_add',
  ]);
  if (authorizationRequest.headers_to_add !== undefined) throw new Error('headers_to_add not reproduced');
  const allowed = listMatcher(config.allowed_headers ?? authorizationRequest.allowed_headers, 'allowed_headers');
  const response = fields(service.authorization_response ?? {}, 'authorization_response', [
    'allowed_upstream_headers',
    'allowed_client_headers',
  ]);
  const toUpstream = listMatcher(response.allowed_upstream_headers, 'allowed_upstream_headers');
  const clientMatchers = response.allowed_client_headers;
  const toClient =
    clientMatchers === undefined
      ? (name: string) => name !== 'host'
      : (() => {
          const matches = listMatcher(clientMatchers, 'allowed_client_headers');
          return (name: string) => matches(name) || ['content-length', 'www-authenticate', 'location'].includes(name);
        })();

  return async (client, call) => {
    // Always sent: :method, :path (the prefix, then the client's path and query), host, authorization.
    const sent: RawHeaders = [['content-length', '0']];
    for (const [name, value] of client.headers) {
      if (name === 'content-length') continue;
      if (name === 'host' || name === 'authorization' || allowed(name)) sent.push([name, value]);
    }
    let answer: Answer;
    try {
      answer = await call(`${uri.replace(/\/$/, '')}${prefix}${client.url}`, { method: client.method, headers: sent });
    } catch {
      return { pass: false, answer: { status: 403, headers: [], body: '' } };
    }
    const names = answer.headers.map(([name, value]): [string, string] => [name.toLowerCase(), value]);
    if (answer.status >= 500) return { pass: false, answer: { status: 403, headers: [], body: '' } };
    if (answer.status !== 200) {
      return { pass: false, answer: { ...answer, headers: names.filter(([name]) => toClient(name)) } };
    }
    // allowed_upstream_headers: set, replacing the request's headers of the same name.
    const set = names.filter(([name]) => toUpstream(name));
    const kept = client.headers.filter(([name]) => !set.some(([replaced]) => replaced === name));
    return { pass: true, headers: [...kept, ...set] };
  };
}
