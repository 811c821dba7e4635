import { KeyObject, sign } from 'node:crypto';
import { parentPort } from 'node:worker_threads';
import type { BatchAnswer, BatchRequest, ThreadResult } from '../common/thread-protocol';

/** The signing thread: a batch of ES256 signatures per message; keys arrive once and are named by number. */

/** A JWS signing input (`header.payload`, base64url) and the number of the key to sign it with. */
export interface SigningItem {
  keyId: number;
  input: string;
}

/** A key for the items that name its number; sent to every new thread before any item. */
export interface SigningKey {
  keyId: number;
  key: KeyObject;
}

export type SigningMessage = SigningKey | BatchRequest<SigningItem>;

const keys = new Map<number, KeyObject>();

/** The base64url JOSE signature (r || s, 64 bytes for P-256), or why there is none. */
function signature({ keyId, input }: SigningItem): ThreadResult<string> {
  const key = keys.get(keyId);
  if (key === undefined) return { error: { message: `signing failed: no key ${keyId}` } };
  try {
    return { value: sign('sha256', Buffer.from(input), { key, dsaEncoding: 'ieee-p1363' }).toString('base64url') };
  } catch (error) {
    return { error: { message: `signing failed: ${error instanceof Error ? error.message : String(error)}` } };
  }
}

const port = parentPort;
if (port === null) throw new Error('signing.worker runs on a worker thread (JwtSigner starts it)');

port.on('message', (message: SigningMessage) => {
  if ('items' in message) {
    port.postMessage({ batch: message.batch, results: message.items.map(signature) } satisfies BatchAnswer<string>);
  } else {
    keys.set(message.keyId, message.key);
  }
});
