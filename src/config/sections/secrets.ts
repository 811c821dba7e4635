import { createPrivateKey, createPublicKey } from 'node:crypto';
import { isP256, pem, PLACEHOLDER, type Reader } from '../reader';

/** The keys and secrets; undefined outside production means "generate and keep one" (local-secrets.ts). */
export interface SecretSettings {
  apiKeyEnvironment: string;
  pepper: string | undefined;
  privateKeyPem: string | undefined;
  previousPublicKeyPems: string[];
  encryptionKey: string | undefined;
  encryptionKeyId: string;
  previousEncryptionKeys: Array<{ id: string; key: string }>;
}

export function parseSecrets(r: Reader, production: boolean): SecretSettings {
  const apiKeyEnvironment = r.string('API_KEY_ENV', 'dev')!;
  if (!/^[a-z0-9]{1,16}$/.test(apiKeyEnvironment)) r.problem('API_KEY_ENV must be 1-16 lower-case letters or digits');

  const pepper = r.string('API_KEY_PEPPER');
  if (pepper !== undefined && (pepper.length < 32 || PLACEHOLDER.test(pepper))) {
    r.problem('API_KEY_PEPPER must be at least 32 characters of random data (e.g. `openssl rand -base64 32`)');
  }
  const privateKeyPem = pem(r.string('JWT_PRIVATE_KEY'));
  if (privateKeyPem !== undefined && !isP256(() => createPrivateKey(privateKeyPem))) {
    r.problem('JWT_PRIVATE_KEY must be a PEM-encoded EC P-256 private key (ES256)');
  }
  const previousPublicKeyPems = parsePreviousPublicKeys(r);
  const encryptionKey = r.string('INTEGRATIONS_ENCRYPTION_KEY');
  if (encryptionKey !== undefined && Buffer.from(encryptionKey, 'base64').length !== 32) {
    r.problem('INTEGRATIONS_ENCRYPTION_KEY must be 32 bytes, base64-encoded (e.g. `openssl rand -base64 32`)');
  }
  const previousEncryptionKeys = parsePreviousEncryptionKeys(r);
  for (const { id, key } of previousEncryptionKeys) {
    if (Buffer.from(key, 'base64').length !== 32) {
      r.problem(`INTEGRATIONS_PREVIOUS_ENCRYPTION_KEYS: key "${id}" must be 32 bytes, base64-encoded`);
    }
  }
  const encryptionKeyId = r.string('INTEGRATIONS_ENCRYPTION_KEY_ID', 'k1')!;
  if (!/^[A-Za-z0-9_-]{1,32}$/.test(encryptionKeyId)) {
    r.problem('INTEGRATIONS_ENCRYPTION_KEY_ID must be 1-32 letters, digits, "-" or "_"');
  }
  checkPreviousKeyIds(r, encryptionKeyId, previousEncryptionKeys);

  if (production) {
    if (pepper === undefined) r.problem('API_KEY_PEPPER is required when NODE_ENV=production');
    if (privateKeyPem === undefined) r.problem('JWT_PRIVATE_KEY is required when NODE_ENV=production');
    if (encryptionKey === undefined) r.problem('INTEGRATIONS_ENCRYPTION_KEY is required when NODE_ENV=production');
  }
  return {
    apiKeyEnvironment,
    pepper,
    privateKeyPem,
    previousPublicKeyPems,
    encryptionKey,
    encryptionKeyId,
    previousEncryptionKeys,
  };
}

function parsePreviousPublicKeys(r: Reader): string[] {
  const raw = r.string('JWT_PREVIOUS_PUBLIC_KEYS');
  if (raw === undefined) return [];
  try {
    const parsed: unknown = JSON.parse(raw);
    if (!Array.isArray(parsed) || !parsed.every((p) => typeof p === 'string')) throw new Error('not a list');
    const keys = parsed.map((p: string) => pem(p)!);
    keys.forEach((key, index) => {
      if (!isP256(() => createPublicKey(key))) {
        r.problem(`JWT_PREVIOUS_PUBLIC_KEYS: entry ${index} is not a PEM-encoded EC P-256 public key`);
      }
    });
    return keys;
  } catch {
    r.problem('JWT_PREVIOUS_PUBLIC_KEYS must be a JSON array of PEM strings');
    return [];
  }
}

function parsePreviousEncryptionKeys(r: Reader): Array<{ id: string; key: string }> {
  const raw = r.string('INTEGRATIONS_PREVIOUS_ENCRYPTION_KEYS');
  if (raw === undefined) return [];
  return raw.split(',').flatMap((pair) => {
    const at = pair.indexOf(':');
    if (at <= 0) {
      r.problem('INTEGRATIONS_PREVIOUS_ENCRYPTION_KEYS must be a comma-separated list of id:base64key');
      return [];
    }
    return [{ id: pair.slice(0, at).trim(), key: pair.slice(at + 1).trim() }];
  });
}

/** A previous key under the current key's id, or two under one id, would shadow each other. */
function checkPreviousKeyIds(r: Reader, currentId: string, previous: ReadonlyArray<{ id: string }>): void {
  const seen = new Set<string>();
  for (const { id } of previous) {
    if (id === currentId) {
      r.problem(
        `INTEGRATIONS_PREVIOUS_ENCRYPTION_KEYS: "${id}" is the id of the current key (INTEGRATIONS_ENCRYPTION_KEY_ID); give the current key a new id`,
      );
    } else if (seen.has(id)) {
      r.problem(`INTEGRATIONS_PREVIOUS_ENCRYPTION_KEYS: the id "${id}" is listed twice`);
    }
    seen.add(id);
  }
}
