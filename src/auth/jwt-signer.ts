import { KeyObject } from 'node:crypto';
import { Worker } from 'node:worker_threads';
import { Injectable, OnApplicationShutdown } from '@nestjs/common';
import { JWT_ALGORITHM } from './signing-keys';

const encode = (value: object): string => Buffer.from(JSON.stringify(value)).toString('base64url');

/** Most signing inputs one message carries (a batch is what one event-loop turn asked for). */
const MAX_BATCH = 256;

/**
 * The signing thread: keys arrive once (`{ keyId, key }`), then batches (`{ batch, keyId, inputs }`)
 * that it answers with one message of base64url signatures, or of the error's message per input.
 */
const SIGNING_THREAD = `
const { parentPort } = require('node:worker_threads');
const { sign } = require('node:crypto');
const keys = new Map();
parentPort.on('message', (message) => {
  if (message.key !== undefined) {
    keys.set(message.keyId, message.key);
    return;
  }
  const key = keys.get(message.keyId);
  const results = message.inputs.map((input) => {
    try {
      return { signature: sign('sha256', Buffer.from(input), { key, dsaEncoding: 'ieee-p1363' }).toString('base64url') };
    } catch (error) {
      return { error: String(error && error.message) };
    }
  });
  parentPort.postMessage({ batch: message.batch, results });
});
`;

interface Pending {
  input: string;
  resolve: (token: string) => void;
  reject: (error: Error) => void;
}

interface SignResult {
  signature?: string;
  error?: string;
}

/**
 * Compact JWS signing with ES256 (RFC 7515/7518) straight on node:crypto. jsonwebtoken (behind
 * @nestjs/jwt, which still verifies our tokens) signs through a DER signature that it converts to
 * the JOSE form in JavaScript, plus option validation on every call: 91 µs a token against 42 µs
 * for the signature itself on the 2-core machine, about a tenth of POST /v1/token. Signing is the
 * small half of JWT; verification, with its algorithm pinning and claim checks, stays with the
 * library (TokenService.verify), and the tests verify every token we sign with jsonwebtoken.
 *
 * The ECDSA signatures run on a thread of their own, in batches: the tokens asked for during one
 * event-loop turn go as one message (at setImmediate) and come back as one. About 22 µs of CPU a
 * token leaves the event loop. Not libuv's pool (crypto.sign with a callback): each of its jobs
 * wakes a pool thread, and on the 2-core VM waking a sleeping thread costs the event loop 15-20 µs,
 * almost what the signature does; one message a batch pays that once (README "Performance").
 * The thread starts at the first signature and stops when the application shuts down, after its
 * HTTP server has closed (it never keeps the process alive). If it dies, the signatures it had are
 * refused (POST /v1/token answers 500) and the next signature starts a new thread.
 */
@Injectable()
export class JwtSigner implements OnApplicationShutdown {
  /** The encoded protected header, per kid: the same for every token signed with one key. */
  private readonly headers = new Map<string, string>();
  private readonly keyIds = new Map<KeyObject, number>();
  /** Inputs not yet sent, per key id. */
  private readonly queued = new Map<number, Pending[]>();
  /** Batches sent and not yet answered, with the thread they were sent to. */
  private readonly inFlight = new Map<number, { worker: Worker; entries: Pending[] }>();
  private worker: Worker | undefined;
  private nextBatch = 0;
  private scheduled = false;

  sign(payload: object, key: KeyObject, kid: string): Promise<string> {
    let header = this.headers.get(kid);
    if (header === undefined) {
      header = encode({ alg: JWT_ALGORITHM, typ: 'JWT', kid });
      this.headers.set(kid, header);
    }
    const input = `${header}.${encode(payload)}`;
    const keyId = this.keyIdOf(key);
    return new Promise((resolve, reject) => {
      let queue = this.queued.get(keyId);
      if (queue === undefined) this.queued.set(keyId, (queue = []));
      queue.push({ input, resolve, reject });
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => this.flush());
      }
    });
  }

  /** After the HTTP server has closed (requests in flight during a drain still sign). */
  async onApplicationShutdown(): Promise<void> {
    const worker = this.worker;
    this.worker = undefined;
    if (worker !== undefined) await worker.terminate();
  }

  private keyIdOf(key: KeyObject): number {
    let id = this.keyIds.get(key);
    if (id === undefined) {
      id = this.keyIds.size;
      this.keyIds.set(key, id);
      // A new thread is given every key when it starts (thread()); a running one, here.
      this.worker?.postMessage({ keyId: id, key });
    }
    return id;
  }

  private flush(): void {
    this.scheduled = false;
    const worker = this.thread();
    // Referenced only while it owes answers: a CLI awaiting a token stays up for it, an idle
    // application is never kept alive by it.
    if (this.inFlight.size === 0) worker.ref();
    for (const [keyId, queue] of this.queued) {
      for (let start = 0; start < queue.length; start += MAX_BATCH) {
        const entries = queue.slice(start, start + MAX_BATCH);
        const batch = this.nextBatch++;
        this.inFlight.set(batch, { worker, entries });
        worker.postMessage({ batch, keyId, inputs: entries.map((entry) => entry.input) });
      }
    }
    this.queued.clear();
  }

  private thread(): Worker {
    if (this.worker !== undefined) return this.worker;
    const worker = new Worker(SIGNING_THREAD, { eval: true });
    for (const [key, keyId] of this.keyIds) worker.postMessage({ keyId, key });
    worker.on('message', (message: { batch: number; results: SignResult[] }) => this.settle(message));
    const fail = (error: Error): void => {
      if (this.worker === worker) this.worker = undefined;
      for (const [batch, sent] of this.inFlight) {
        if (sent.worker !== worker) continue;
        this.inFlight.delete(batch);
        for (const entry of sent.entries) entry.reject(error);
      }
    };
    worker.on('error', fail);
    worker.on('exit', (code) => fail(new Error(`the signing thread stopped (exit code ${code})`)));
    // After its listeners: a worker unreferenced before them would be referenced again by them.
    worker.unref();
    this.worker = worker;
    return worker;
  }

  private settle({ batch, results }: { batch: number; results: SignResult[] }): void {
    const sent = this.inFlight.get(batch);
    if (sent === undefined) return;
    this.inFlight.delete(batch);
    if (this.inFlight.size === 0) sent.worker.unref();
    sent.entries.forEach((entry, index) => {
      const { signature, error } = results[index];
      if (signature !== undefined) entry.resolve(`${entry.input}.${signature}`);
      else entry.reject(new Error(`signing failed: ${error}`));
    });
  }
}
