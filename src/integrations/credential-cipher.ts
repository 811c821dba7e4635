import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

/**
 * Provider keys at rest (docs/api.md#notification-integration-object): AES-256-GCM with a fresh 96-bit IV per value.
 */
export interface CipherKey {
  id: string;
  /** 32 bytes, base64. */
  key: string;
}

const VERSION = 'v1';
const IV_BYTES = 12;
const TAG_BYTES = 16;

export class CredentialDecryptionError extends Error {
  constructor(reason: string) {
    super(`cannot decrypt stored credential: ${reason}`);
    this.name = 'CredentialDecryptionError';
  }
}

export class CredentialCipher {
  private readonly keys = new Map<string, Buffer>();

  /** `table` names what the sealed values belong to, in each value's associated data (webhooks seal their secrets too). */
  constructor(
    private readonly current: CipherKey,
    previous: readonly CipherKey[] = [],
    private readonly table = 'notification_integrations',
  ) {
    for (const { id, key } of [...previous, current]) {
      const bytes = Buffer.from(key, 'base64');
      if (bytes.length !== 32) throw new Error(`encryption key "${id}" must be 32 bytes`);
      if (!/^[A-Za-z0-9_-]{1,32}$/.test(id)) throw new Error(`encryption key id "${id}" is not usable`);
      this.keys.set(id, bytes);
    }
  }

  encrypt(plaintext: string, recordId: string, field: string): string {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.keys.get(this.current.id)!, iv, { authTagLength: TAG_BYTES });
    cipher.setAAD(associatedData(this.table, recordId, field));
    const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return [VERSION, this.current.id, b64(iv), b64(ciphertext), b64(cipher.getAuthTag())].join(':');
  }

  decrypt(stored: string, recordId: string, field: string): string {
    const parts = stored.split(':');
    if (parts.length !== 5 || parts[0] !== VERSION) throw new CredentialDecryptionError('unknown format');
    const [, keyId, iv, ciphertext, tag] = parts;
    const key = this.keys.get(keyId);
    if (key === undefined) throw new CredentialDecryptionError(`key "${keyId}" is not configured`);
    const tagBytes = Buffer.from(tag, 'base64url');
    const ivBytes = Buffer.from(iv, 'base64url');
    if (tagBytes.length !== TAG_BYTES || ivBytes.length !== IV_BYTES) throw new CredentialDecryptionError('malformed');
    try {
      const decipher = createDecipheriv('aes-256-gcm', key, ivBytes, { authTagLength: TAG_BYTES });
      decipher.setAAD(associatedData(this.table, recordId, field));
      decipher.setAuthTag(tagBytes);
      return Buffer.concat([decipher.update(Buffer.from(ciphertext, 'base64url')), decipher.final()]).toString('utf8');
    } catch {
      throw new CredentialDecryptionError('authentication failed');
    }
  }

  /** The id of the key a stored value was sealed with. */
  static keyIdOf(stored: string): string | undefined {
    const parts = stored.split(':');
    return parts.length === 5 ? parts[1] : undefined;
  }
}

function associatedData(table: string, recordId: string, field: string): Buffer {
  return Buffer.from(`gatehouse/${table}/${recordId}/${field}`, 'utf8');
}

function b64(bytes: Buffer): string {
  return bytes.toString('base64url');
}
