import { createPublicKey, generateKeyPairSync, KeyObject, verify } from 'node:crypto';
import { Worker } from 'node:worker_threads';
import jwt from 'jsonwebtoken';
import { testWorkerFile } from '../../test/support/build-directory';
import type { BatchAnswer, ThreadResult } from '../common/thread-protocol';
import type { SigningItem, SigningMessage } from './signing.worker';

const encode = (value: object): string => Buffer.from(JSON.stringify(value)).toString('base64url');

/** A JWS signing input, as JwtSigner makes them. */
const signingInput = (sub: string): string =>
  `${encode({ alg: 'ES256', typ: 'JWT', kid: 'k' })}.${encode({ sub, iat: 1_800_000_000, exp: 4_000_000_000 })}`;

/** True when `result` is a JOSE (r || s) signature of `input` under `publicKey`. */
function signs(result: ThreadResult<string>, input: string, publicKey: KeyObject): boolean {
  if (!('value' in result)) return false;
  const signature = Buffer.from(result.value, 'base64url');
  return verify('sha256', Buffer.from(input), { key: publicKey, dsaEncoding: 'ieee-p1363' }, signature);
}

/** The compiled worker (dist/auth/signing.worker.js in production) on a thread, as JwtSigner runs it. */
describe('signing.worker', () => {
  const first = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey;
  const second = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey;
  let worker: Worker;
  const answers = new Map<number, (answer: BatchAnswer<string>) => void>();
  let nextBatch = 0;

  const send = (message: SigningMessage): void => worker.postMessage(message);
  /** Sends a batch now; resolves with the answer that names it. */
  const ask = (items: SigningItem[]): Promise<BatchAnswer<string>> => {
    const batch = nextBatch++;
    const answered = new Promise<BatchAnswer<string>>((resolve) => answers.set(batch, resolve));
    send({ batch, items });
    return answered;
  };

  beforeAll(() => {
    worker = new Worker(testWorkerFile('auth/signing.worker.js'));
    worker.on('message', (answer: BatchAnswer<string>) => answers.get(answer.batch)?.(answer));
    send({ keyId: 0, key: first });
    send({ keyId: 1, key: second });
  });
  afterAll(() => worker.terminate());

  it('signs every input of a batch with the key it names, answering in the order of the items', async () => {
    const items = Array.from({ length: 6 }, (_, index) => ({ keyId: index % 2, input: signingInput(`user-${index}`) }));
    const answer = await ask(items);
    expect(answer.results).toHaveLength(6);
    answer.results.forEach((result, index) => {
      const [own, other] = index % 2 === 0 ? [first, second] : [second, first];
      expect(signs(result, items[index].input, createPublicKey(own))).toBe(true);
      expect(signs(result, items[index].input, createPublicKey(other))).toBe(false);
    });
  });

  it('makes ES256 JWS signatures that jsonwebtoken verifies with the algorithm pinned', async () => {
    const input = signingInput('user-jwt');
    const { results } = await ask([{ keyId: 0, input }]);
    const signature = (results[0] as { value: string }).value;
    expect(Buffer.from(signature, 'base64url')).toHaveLength(64); // r || s, not DER
    const verified = jwt.verify(`${input}.${signature}`, createPublicKey(first), { algorithms: ['ES256'] });
    expect(verified).toEqual({ sub: 'user-jwt', iat: 1_800_000_000, exp: 4_000_000_000 });
  });

  it('answers batches sent together each under its own number (an answer under another would not verify)', async () => {
    const batches = [0, 1, 2].map((index) => [{ keyId: 0, input: signingInput(`batch-${index}`) }]);
    const answers = await Promise.all(batches.map((items) => ask(items)));
    answers.forEach((answer, index) => {
      expect(signs(answer.results[0], batches[index][0].input, createPublicKey(first))).toBe(true);
    });
  });

  it('refuses an item whose key id it was never sent, and signs the others of its batch', async () => {
    const input = signingInput('user');
    const { results } = await ask([
      { keyId: 0, input },
      { keyId: 7, input },
      { keyId: 1, input },
    ]);
    expect(results[1]).toEqual({ error: { message: 'signing failed: no key 7' } });
    expect(signs(results[0], input, createPublicKey(first))).toBe(true);
    expect(signs(results[2], input, createPublicKey(second))).toBe(true);
  });

  it('refuses an item whose key cannot make an ES256 signature, and signs the others of its batch', async () => {
    send({ keyId: 2, key: generateKeyPairSync('ed25519').privateKey });
    const input = signingInput('user');
    const { results } = await ask([
      { keyId: 2, input },
      { keyId: 0, input },
    ]);
    expect(results[0]).toEqual({ error: { message: expect.stringMatching(/^signing failed: ./) } });
    expect(signs(results[1], input, createPublicKey(first))).toBe(true);
  });
});
