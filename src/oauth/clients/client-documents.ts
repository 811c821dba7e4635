import { Inject, Injectable } from '@nestjs/common';
import { InjectConfig } from '../../config/config.module';
import type { AppConfiguration } from '../../config/configuration';
import { describeFetchError, FetchProblem, pinnedFetch } from '../../federation/bounded-fetch';
import { ClientRefused, clientFromDocument, documentUrlProblem, OAuthClient } from './client-document';

/** A document is read within this deadline and up to this size (the draft suggests 5 KB). */
export const DOCUMENT_TIMEOUT_MS = 3_000;
export const DOCUMENT_MAX_BYTES = 5 * 1024;
/** Kept this long when the answer says nothing of caching; never longer than a day. */
const DEFAULT_CACHE_SECONDS = 300;
const MAX_CACHE_SECONDS = 86_400;
const MAX_ENTRIES = 1_000;

/** Certificate authorities the document fetch trusts instead of Node's (null: Node's); a test's local CA. */
export const CLIENT_DOCUMENT_CA = Symbol('CLIENT_DOCUMENT_CA');

/** How long an answer may be kept, from its Cache-Control (RFC 9111): no-store and no-cache keep nothing. */
export function cacheSeconds(cacheControl: string | null): number {
  if (cacheControl === null) return DEFAULT_CACHE_SECONDS;
  const directives = cacheControl
    .toLowerCase()
    .split(',')
    .map((part) => part.trim());
  if (directives.some((d) => d === 'no-store' || d === 'no-cache')) return 0;
  const maxAge = directives.find((d) => d.startsWith('max-age='));
  if (maxAge === undefined) return DEFAULT_CACHE_SECONDS;
  const seconds = Number(maxAge.slice('max-age='.length));
  return Number.isInteger(seconds) && seconds >= 0 ? Math.min(seconds, MAX_CACHE_SECONDS) : 0;
}

/**
 * Fetches Client ID Metadata Documents with a deadline and a size bound, from public addresses only in production
 * (loopback too outside it; private never), redirects not followed, and keeps each as its Cache-Control says
 * (docs/adr/0053-mcp-authorization-server.md).
 */
@Injectable()
export class ClientDocuments {
  private readonly cache = new Map<string, { client: OAuthClient; untilMs: number }>();
  private readonly allowLoopback: boolean;

  constructor(
    @InjectConfig() config: AppConfiguration,
    @Inject(CLIENT_DOCUMENT_CA) private readonly ca: string | null,
  ) {
    this.allowLoopback = !config.production;
  }

  async client(clientId: string): Promise<OAuthClient> {
    const problem = documentUrlProblem(clientId);
    if (problem !== null) throw new ClientRefused(problem);
    const cached = this.cache.get(clientId);
    if (cached !== undefined && cached.untilMs > Date.now()) return cached.client;
    this.cache.delete(clientId);
    const { body, seconds } = await this.fetch(clientId);
    let document: unknown;
    try {
      document = JSON.parse(body.toString('utf8'));
    } catch {
      throw new ClientRefused('the client metadata document is not JSON');
    }
    const client = clientFromDocument(clientId, document);
    if (seconds > 0) {
      if (this.cache.size >= MAX_ENTRIES) this.cache.delete(this.cache.keys().next().value!);
      this.cache.set(clientId, { client, untilMs: Date.now() + seconds * 1000 });
    }
    return client;
  }

  private async fetch(url: string): Promise<{ body: Buffer; seconds: number }> {
    try {
      const response = await pinnedFetch(
        url,
        { headers: { accept: 'application/json' }, signal: AbortSignal.timeout(DOCUMENT_TIMEOUT_MS) },
        { allowLoopback: this.allowLoopback, maxBytes: DOCUMENT_MAX_BYTES, ca: this.ca ?? undefined },
      );
      if (response.status !== 200) {
        throw new ClientRefused(`the client metadata document answered ${response.status}`);
      }
      return {
        body: Buffer.from(await response.arrayBuffer()),
        seconds: cacheSeconds(response.headers.get('cache-control')),
      };
    } catch (error) {
      if (error instanceof ClientRefused) throw error;
      const why = error instanceof FetchProblem ? error.message : describeFetchError(error, DOCUMENT_TIMEOUT_MS);
      throw new ClientRefused(`the client metadata document could not be read: ${why}`);
    }
  }
}
