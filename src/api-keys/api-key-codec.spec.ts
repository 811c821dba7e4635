import { crc32 } from 'node:zlib';
import { ApiKeyCodec } from './api-key-codec';
import { SecretHasher } from '../common/secret-hasher';

describe('ApiKeyCodec', () => {
  const codec = new ApiKeyCodec('dev');
  const keyId = '0f8fad5b-d9cb-469f-a165-70867728950e';

  it('formats env.keyid.secret.crc32 with the dashes removed and a zlib CRC-32', () => {
    const secret = ApiKeyCodec.newSecret();
    const value = codec.format(keyId, secret);
    const [env, hex, sec, sum] = value.split('.');
    expect(env).toBe('dev');
    expect(hex).toBe('0f8fad5bd9cb469fa16570867728950e');
    expect(sec).toBe(secret);
    expect(sec).toHaveLength(43);
    expect(Buffer.from(sec, 'base64url')).toHaveLength(32);
    expect(sum).toBe(crc32(`dev.${hex}.${sec}`).toString(16).padStart(8, '0'));
    expect(sum).toMatch(/^[0-9a-f]{8}$/);
  });

  it('round-trips a formatted key', () => {
    const secret = ApiKeyCodec.newSecret();
    expect(codec.parse(codec.format(keyId, secret))).toEqual({ keyId, secret });
  });

  it('makes a different secret every time', () => {
    const secrets = new Set(Array.from({ length: 100 }, () => ApiKeyCodec.newSecret()));
    expect(secrets.size).toBe(100);
  });

  describe('rejects without a lookup', () => {
    // A key whose checksum has a letter, so that its upper-case form is another string (about 2 % of
    // checksums are all digits, and then the "upper-case checksum" case would be the good key itself).
    const withLetterInChecksum = (): string => {
      const key = codec.format(keyId, ApiKeyCodec.newSecret());
      return /[a-f]/.test(key.split('.')[3]) ? key : withLetterInChecksum();
    };
    const good = withLetterInChecksum();
    const [env, hex, secret, sum] = good.split('.');
    const flip = (s: string, i: number): string => s.slice(0, i) + (s[i] === 'a' ? 'b' : 'a') + s.slice(i + 1);
    const cases: Array<[string, string]> = [
      ['empty', ''],
      ['three segments', `${env}.${hex}.${secret}`],
      ['five segments', `${good}.x`],
      ['a foreign environment', new ApiKeyCodec('prod').format(keyId, secret)],
      ['an upper-case key id', `${env}.${hex.toUpperCase()}.${secret}.${sum}`],
      ['a short key id', `${env}.${hex.slice(1)}.${secret}.${sum}`],
      ['a truncated secret', `${env}.${hex}.${secret.slice(1)}.${sum}`],
      ['a secret with padding alphabet', `${env}.${hex}.${secret.slice(0, 42)}=.${sum}`],
      ['a mistyped secret', `${env}.${hex}.${flip(secret, 5)}.${sum}`],
      ['a mistyped key id', `${env}.${flip(hex, 3)}.${secret}.${sum}`],
      ['a wrong checksum', `${env}.${hex}.${secret}.${flip(sum, 0)}`],
      ['an upper-case checksum', `${env}.${hex}.${secret}.${sum.toUpperCase()}`],
      ['surrounding space', ` ${good}`],
      ['a trailing newline', `${good}\n`],
    ];
    it.each(cases)('%s', (_name, value) => {
      expect(codec.parse(value)).toBeNull();
    });
  });

  it('rejects a non-canonical base64url spelling of the secret even with a matching checksum', () => {
    const secret = ApiKeyCodec.newSecret();
    const last = secret[42];
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
    const twin = alphabet[alphabet.indexOf(last) ^ 1];
    const value = codec.format(keyId, secret.slice(0, 42) + twin);
    expect(codec.parse(value)).toBeNull();
  });
});

describe('SecretHasher', () => {
  const hasher = new SecretHasher('p'.repeat(32));

  it('stores an HMAC, not the secret, and matches only the same secret', () => {
    const secret = ApiKeyCodec.newSecret();
    const hash = hasher.hash(secret);
    expect(hash).toMatch(/^[0-9a-f]{64}$/);
    expect(hash).not.toContain(secret);
    expect(hasher.matches(secret, hash)).toBe(true);
    expect(hasher.matches(ApiKeyCodec.newSecret(), hash)).toBe(false);
  });

  it('depends on the pepper', () => {
    const secret = ApiKeyCodec.newSecret();
    expect(new SecretHasher('q'.repeat(32)).matches(secret, hasher.hash(secret))).toBe(false);
  });

  it('does not throw on a stored hash of the wrong length', () => {
    expect(hasher.matches('x', 'abcd')).toBe(false);
  });
});
