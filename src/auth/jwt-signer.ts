import { KeyObject } from 'node:crypto';
import { Inject, Injectable, OnApplicationShutdown } from '@nestjs/common';
import { BatchingThread, WORKER_DIRECTORY, workerFile } from '../common/batching-thread';
import type { SigningItem, SigningKey } from './signing.worker';
import { JWT_ALGORITHM } from './signing-keys';

export type JoseType = 'JWT' | 'at+jwt';

const encode = (value: object): string => Buffer.from(JSON.stringify(value)).toString('base64url');

/**
 * ES256 compact JWS signing on node:crypto, on a worker thread, one message per event-loop turn: 91 µs a token
 * through jsonwebtoken against 42 µs (docs/adr/0011-worker-threads-as-compiled-modules.md, docs/adr/0027-the-house.md).
 */
@Injectable()
export class JwtSigner implements OnApplicationShutdown {
  /** The encoded protected header, per `typ` and kid: the same for every token of one kind signed with one key. */
  private readonly headers = { JWT: new Map<string, string>(), 'at+jwt': new Map<string, string>() };
  private readonly keyIds = new Map<KeyObject, number>();
  private readonly thread: BatchingThread<SigningItem, string, SigningKey>;

  constructor(@Inject(WORKER_DIRECTORY) workerDirectory: string) {
    this.thread = new BatchingThread('signing', workerFile('auth/signing.worker.js', workerDirectory), {
      onStart: (post) => {
        for (const [key, keyId] of this.keyIds) post({ keyId, key });
      },
    });
  }

  /** `typ`: the JOSE header's media type, `at+jwt` for access tokens (RFC 9068), `JWT` otherwise. */
  async sign(payload: object, key: KeyObject, kid: string, typ: JoseType = 'JWT'): Promise<string> {
    const headers = this.headers[typ];
    let header = headers.get(kid);
    if (header === undefined) {
      header = encode({ alg: JWT_ALGORITHM, typ, kid });
      headers.set(kid, header);
    }
    const input = `${header}.${encode(payload)}`;
    const signature = await this.thread.run({ keyId: this.keyIdOf(key), input });
    return `${input}.${signature}`;
  }

  /** After the HTTP server has closed (requests in flight during a drain still sign). */
  onApplicationShutdown(): Promise<void> {
    return this.thread.close();
  }

  private keyIdOf(key: KeyObject): number {
    let keyId = this.keyIds.get(key);
    if (keyId === undefined) {
      keyId = this.keyIds.size;
      this.keyIds.set(key, keyId);
      this.thread.post({ keyId, key }); // a thread that starts later gets every key (onStart)
    }
    return keyId;
  }
}
