/**
 * GET with a deadline and a size bound, for what Gatehouse fetches from identity providers (discovery documents and key
 * sets): an issuer that is slow, silent or sends without end fails in bounded time and memory (docs/federation.md).
 */

/** Why a fetch gave no usable answer, in words an operator can act on. */
export class FetchProblem extends Error {}

export interface BoundedAnswer {
  status: number;
  body: Buffer;
}

/** Redirects are not followed: an issuer's documents are at the addresses it publishes. */
export async function fetchBounded(
  url: string,
  options: { timeoutMs: number; maxBytes: number; accept: string },
): Promise<BoundedAnswer> {
  const signal = AbortSignal.timeout(options.timeoutMs);
  try {
    const response = await fetch(url, { redirect: 'manual', signal, headers: { accept: options.accept } });
    if (response.status !== 200) {
      await response.body?.cancel();
      return { status: response.status, body: Buffer.alloc(0) };
    }
    return { status: 200, body: await readBounded(response, options.maxBytes) };
  } catch (error) {
    throw new FetchProblem(describeFetchError(error, options.timeoutMs), { cause: error });
  }
}

/** A fetch for jose's createRemoteJWKSet (its [customFetch]): jose's deadline and redirect rule, with a size bound. */
export function boundedJwksFetch(maxBytes: number) {
  return async (
    url: string,
    init: { headers: Headers; method: 'GET'; redirect: 'manual'; signal: AbortSignal },
  ): Promise<Response> => {
    const response = await fetch(url, init);
    if (response.status !== 200) {
      await response.body?.cancel();
      return new Response(null, { status: response.status });
    }
    return new Response(new Uint8Array(await readBounded(response, maxBytes)), { status: 200 });
  };
}

async function readBounded(response: Response, maxBytes: number): Promise<Buffer> {
  const declared = Number(response.headers.get('content-length') ?? '0');
  if (declared > maxBytes) {
    await response.body?.cancel();
    throw new FetchProblem(`the answer is larger than ${maxBytes} bytes`);
  }
  const chunks: Uint8Array[] = [];
  let size = 0;
  if (response.body === null) return Buffer.alloc(0);
  // Leaving the loop early (the throw) cancels the stream.
  for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
    size += chunk.byteLength;
    if (size > maxBytes) throw new FetchProblem(`the answer is larger than ${maxBytes} bytes`);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

/** "no answer within 3 s", "connect ECONNREFUSED 127.0.0.1:9", "getaddrinfo ENOTFOUND idp.example.com"… */
export function describeFetchError(error: unknown, timeoutMs: number): string {
  if (error instanceof FetchProblem) return error.message;
  const { name, message, cause } = error as { name?: string; message?: string; cause?: { message?: string } };
  if (name === 'TimeoutError' || name === 'AbortError') return `no answer within ${timeoutMs / 1000} s`;
  return cause?.message ?? message ?? String(error);
}
