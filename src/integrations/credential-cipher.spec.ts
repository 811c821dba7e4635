import { randomBytes } from 'node:crypto';
import { CredentialCipher, CredentialDecryptionError } from './credential-cipher';

const key = (): string => randomBytes(32).toString('base64');
const recordId = '0f8fad5b-d9cb-469f-a165-70867728950e';

describe('CredentialCipher', () => {
  const k1 = { id: 'k1', key: key() };
  const cipher = new CredentialCipher(k1);
  const secret = '0123456789abcdef0123456789abcdef';

  it('round-trips and never stores the plaintext', () => {
    const sealed = cipher.encrypt(secret, recordId, 'api_key');
    expect(sealed).toMatch(/^v1:k1:[A-Za-z0-9_-]{16}:[A-Za-z0-9_-]+:[A-Za-z0-9_-]{22}$/);
    expect(sealed).not.toContain(secret);
    expect(sealed).not.toContain(Buffer.from(secret).toString('base64url'));
    expect(cipher.decrypt(sealed, recordId, 'api_key')).toBe(secret);
    expect(CredentialCipher.keyIdOf(sealed)).toBe('k1');
  });

  it('uses a fresh IV each time', () => {
    expect(cipher.encrypt(secret, recordId, 'api_key')).not.toBe(cipher.encrypt(secret, recordId, 'api_key'));
  });

  it('binds the value to its record and field', () => {
    const sealed = cipher.encrypt(secret, recordId, 'api_key');
    expect(() => cipher.decrypt(sealed, '1f8fad5b-d9cb-469f-a165-70867728950e', 'api_key')).toThrow(
      CredentialDecryptionError,
    );
    expect(() => cipher.decrypt(sealed, recordId, 'application_key')).toThrow(CredentialDecryptionError);
  });

  it('detects tampering', () => {
    const sealed = cipher.encrypt(secret, recordId, 'api_key');
    const parts = sealed.split(':');
    const body = Buffer.from(parts[3], 'base64url');
    body[0] ^= 1;
    parts[3] = body.toString('base64url');
    expect(() => cipher.decrypt(parts.join(':'), recordId, 'api_key')).toThrow(CredentialDecryptionError);
    expect(() => cipher.decrypt('v2:k1:a:b:c', recordId, 'api_key')).toThrow(CredentialDecryptionError);
    expect(() => cipher.decrypt('garbage', recordId, 'api_key')).toThrow(CredentialDecryptionError);
  });

  it('rotates: new values use the current key, old ones still open with a previous key', () => {
    const old = cipher.encrypt(secret, recordId, 'api_key');
    const rotated = new CredentialCipher({ id: 'k2', key: key() }, [k1]);
    expect(rotated.decrypt(old, recordId, 'api_key')).toBe(secret);
    const fresh = rotated.encrypt(secret, recordId, 'api_key');
    expect(CredentialCipher.keyIdOf(fresh)).toBe('k2');
    expect(() => cipher.decrypt(fresh, recordId, 'api_key')).toThrow(/key "k2" is not configured/);
  });

  it('refuses a value sealed with another key under the same id', () => {
    const other = new CredentialCipher({ id: 'k1', key: key() });
    expect(() => other.decrypt(cipher.encrypt(secret, recordId, 'api_key'), recordId, 'api_key')).toThrow(
      /authentication failed/,
    );
  });

  it('refuses keys that are not 32 bytes', () => {
    expect(() => new CredentialCipher({ id: 'k1', key: randomBytes(16).toString('base64') })).toThrow(/32 bytes/);
  });

  it('handles non-ASCII and empty plaintext', () => {
    for (const value of ['', 'ключ-🔑']) {
      expect(cipher.decrypt(cipher.encrypt(value, recordId, 'f'), recordId, 'f')).toBe(value);
    }
  });
});
