import { createHash } from 'node:crypto';
import { covers, newSecret, pkceMatches, REFRESH_PREFIX, scopeSet, secretHash } from './grant-secrets';

describe('grant secrets', () => {
  const verifier = 'a'.repeat(43);
  const challenge = createHash('sha256').update(verifier).digest('base64url');

  it('matches a S256 verifier and nothing else', () => {
    expect(pkceMatches(verifier, challenge)).toBe(true);
    expect(pkceMatches('b'.repeat(43), challenge)).toBe(false);
    expect(pkceMatches(undefined, challenge)).toBe(false);
    expect(pkceMatches('short', createHash('sha256').update('short').digest('base64url'))).toBe(false);
    // plain: the verifier itself as the challenge is refused.
    expect(pkceMatches(verifier, verifier)).toBe(false);
  });

  it('hashes only its own secrets', () => {
    const token = newSecret(REFRESH_PREFIX);
    expect(secretHash(token, REFRESH_PREFIX)).toMatch(/^[0-9a-f]{64}$/);
    expect(secretHash(token, 'gh_ac_')).toBeNull();
    expect(secretHash(`${token}x`, REFRESH_PREFIX)).toBeNull();
  });

  it('sorts scopes and compares them as sets', () => {
    expect(scopeSet('b a  b')).toEqual(['a', 'b']);
    expect(covers('a b', ['b'])).toBe(true);
    expect(covers('a', ['a', 'b'])).toBe(false);
  });
});
