import { readFileSync } from 'node:fs';
import { createServer, IncomingHttpHeaders, request, Server } from 'node:http';
import { resolve } from 'node:path';
import { waitFor } from './wait';

/**
 * What the gateway tests share (test/oauth/nginx.e2e-spec.ts, *gateway*.e2e-spec.ts): the configuration blocks of
 * docs/resource-servers.md, read at test time so that the page cannot drift from what runs; an upstream that echoes
 * what it received; and raw requests whose header names go out exactly as written.
 */

export const DOCS_PAGE = resolve(__dirname, '../../docs/resource-servers.md');

/**
 * The ```language blocks of the docs page's section whose heading line starts with `heading` (`### nginx`), up to the
 * next heading of level 1 to 3; a block indented in a list item comes without its indentation.
 */
export function documentedBlocks(heading: string, language: string): string[] {
  // A `#` line inside a code block is no heading.
  let inSection = false;
  let fence: { indent: string; language: string; lines: string[] } | undefined;
  const blocks: string[] = [];
  for (const line of readFileSync(DOCS_PAGE, 'utf8').split('\n')) {
    if (fence !== undefined) {
      if (line === `${fence.indent}\`\`\``) {
        if (inSection && fence.language === language) blocks.push(fence.lines.join('\n') + '\n');
        fence = undefined;
      } else {
        fence.lines.push(line.startsWith(fence.indent) ? line.slice(fence.indent.length) : line);
      }
    } else if (/^ *```/.test(line)) {
      const indent = /^ */.exec(line)![0];
      fence = { indent, language: line.slice(indent.length + 3).trim(), lines: [] };
    } else if (/^#{1,3} /.test(line)) {
      inSection = line.startsWith(heading);
    }
  }
  return blocks;
}

/** The one ```language block of the docs page's section `heading` (see documentedBlocks). */
export function documentedBlock(heading: string, language: string): string {
  const blocks = documentedBlocks(heading, language);
  if (blocks.length !== 1) {
    throw new Error(`docs/resource-servers.md "${heading}": ${blocks.length} \`\`\`${language} blocks, not 1`);
  }
  return blocks[0];
}

export type RawHeaders = Array<[string, string]>;

/** Node's rawHeaders (name, value, name, value...) as pairs. */
export function pairs(raw: string[]): RawHeaders {
  const result: RawHeaders = [];
  for (let i = 0; i < raw.length; i += 2) result.push([raw[i], raw[i + 1]]);
  return result;
}

export interface ReceivedRequest {
  method: string;
  url: string;
  headers: RawHeaders;
}

export interface EchoUpstream {
  port: number;
  /** Every request it received, in order. */
  received: ReceivedRequest[];
  close(): Promise<void>;
}

/** A loopback upstream service: answers 200 `upstream <method> <url>` and remembers each request's headers. */
export async function startEchoUpstream(): Promise<EchoUpstream> {
  const received: ReceivedRequest[] = [];
  const server: Server = createServer((incoming, response) => {
    received.push({ method: incoming.method!, url: incoming.url!, headers: pairs(incoming.rawHeaders) });
    incoming.resume();
    incoming.on('end', () => response.end(`upstream ${incoming.method} ${incoming.url}`));
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  return {
    port: (server.address() as { port: number }).port,
    received,
    close: () => new Promise<void>((ok) => (server.listening ? server.close(() => ok()) : ok())),
  };
}

export interface RawResponse {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

/**
 * One HTTP/1.1 request to 127.0.0.1:`port` with `path` and `headers` sent exactly as given: letter case, duplicates
 * and underscores included (fetch would lower-case and merge them). Adds `Host` unless given.
 */
export function send(port: number, path: string, headers: RawHeaders = [], method = 'GET'): Promise<RawResponse> {
  const all = headers.some(([name]) => name.toLowerCase() === 'host') ? headers : [['Host', 'orders.test'], ...headers];
  return new Promise((ok, fail) => {
    const outgoing = request(
      { host: '127.0.0.1', port, method, path, headers: all.flat(), agent: false },
      (response) => {
        let body = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => (body += chunk));
        response.on('end', () => ok({ status: response.statusCode!, headers: response.headers, body }));
        response.on('error', fail);
      },
    );
    outgoing.on('error', fail);
    outgoing.end();
  });
}

/** Polls `probe` until it resolves, for a gateway that was just started; `exited` says whether it died meanwhile. */
export async function waitUntilListening(
  probe: () => Promise<unknown>,
  exited: () => string | undefined,
  timeoutMs = 10_000,
): Promise<void> {
  let last: unknown;
  await waitFor(
    'the gateway listening',
    async () => {
      const died = exited();
      if (died !== undefined) throw new Error(died);
      return probe().then(
        () => true,
        (error: unknown) => void (last = error),
      );
    },
    { timeoutMs, everyMs: 50 },
  ).catch((error: Error) => {
    // Past the deadline: with the probe's last error. A gateway that died: as it said.
    if (last === undefined || !error.message.startsWith('the gateway listening: not after')) throw error;
    throw new Error(`the gateway did not listen: ${(last as Error).message}`, { cause: last });
  });
}
