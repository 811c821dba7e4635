import { createHash } from 'node:crypto';
import { randomUUID } from 'node:crypto';
import {
  CODE_PREFIX,
  covers,
  newRefreshToken,
  newSecret,
  pkceMatches,
  refreshChainOf,
  REFRESH_PREFIX,
  scopeSet,
  secretHash,
} from './grant-secrets';

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
    const code = newSecret(CODE_PREFIX);
    expect(code).toMatch(/^gh_ac_[A-Za-z0-9_-]{43}$/);
    expect(secretHash(code, CODE_PREFIX)).toMatch(/^[0-9a-f]{64}$/);
    expect(secretHash(code, REFRESH_PREFIX)).toBeNull();
    expect(secretHash(`${code}x`, CODE_PREFIX)).toBeNull();
    const token = newRefreshToken(randomUUID());
    expect(secretHash(token, REFRESH_PREFIX)).toMatch(/^[0-9a-f]{64}$/);
    expect(secretHash(token, CODE_PREFIX)).toBeNull();
    expect(secretHash(`${token}x`, REFRESH_PREFIX)).toBeNull();
  });

  it('draws every secret anew', () => {
    const secrets = new Set(Array.from({ length: 1000 }, () => newSecret(CODE_PREFIX)));
    expect(secrets.size).toBe(1000);
  });

  it('names the chain in a refresh token, spelled one way only', () => {
    const chain = randomUUID();
    const first = newRefreshToken(chain);
    const next = newRefreshToken(chain);
    expect(first).toMatch(/^gh_rt_[A-Za-z0-9_-]{65}$/);
    expect(next).not.toBe(first);
    expect(refreshChainOf(first)).toBe(chain);
    expect(refreshChainOf(next)).toBe(chain);
    // The 22nd character carries 2 bits of the id and 4 that must be zero: another spelling of the same id is refused.
    const named = first.slice(6, 28);
    const other = `${named.slice(0, 21)}${named[21] === 'A' ? 'B' : 'A'}`;
    expect(refreshChainOf(`gh_rt_${other}${first.slice(28)}`)).not.toBe(chain);
    expect(refreshChainOf(`gh_rt_${'A'.repeat(43)}`)).toBeNull();
    expect(refreshChainOf(newSecret(CODE_PREFIX))).toBeNull();
  });

  it('sorts scopes and compares them as sets', () => {
    expect(scopeSet('b a  b')).toEqual(['a', 'b']);
    expect(covers('a b', ['b'])).toBe(true);
    expect(covers('a', ['a', 'b'])).toBe(false);
  });
});
