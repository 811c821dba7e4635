import {
  audienceContains,
  CLOCK_LEEWAY_SECONDS,
  isAllowedAlgorithm,
  MAX_SUBJECT_TOKEN_LIFETIME_SECONDS,
  timeRefusal,
} from './subject-token-rules';

describe('subject token rules', () => {
  const now = 1_800_000_000;

  it('allows RS256, PS256, ES256 and EdDSA only', () => {
    expect(['RS256', 'PS256', 'ES256', 'EdDSA'].map(isAllowedAlgorithm)).toEqual([true, true, true, true]);
    for (const alg of ['none', 'NONE', 'HS256', 'HS512', 'RS384', 'ES512', 'Ed25519', 'rs256', '', undefined, 1]) {
      expect(isAllowedAlgorithm(alg)).toBe(false);
    }
  });

  it('refuses an expired token past the leeway, and accepts one within it', () => {
    expect(CLOCK_LEEWAY_SECONDS).toBe(60);
    expect(timeRefusal({ iat: now - 600, exp: now - 60 }, now)).toBe('expired');
    expect(timeRefusal({ iat: now - 600, exp: now - 59 }, now)).toBeNull();
  });

  it('refuses iat or nbf more than the leeway in the future', () => {
    expect(timeRefusal({ iat: now + 61, exp: now + 600 }, now)).toBe('not_yet_valid');
    expect(timeRefusal({ iat: now + 60, exp: now + 600 }, now)).toBeNull();
    expect(timeRefusal({ iat: now, nbf: now + 61, exp: now + 600 }, now)).toBe('not_yet_valid');
    expect(timeRefusal({ iat: now, nbf: now + 60, exp: now + 600 }, now)).toBeNull();
  });

  it('refuses a lifetime (exp - iat) over one hour', () => {
    expect(MAX_SUBJECT_TOKEN_LIFETIME_SECONDS).toBe(3600);
    expect(timeRefusal({ iat: now, exp: now + 3601 }, now)).toBe('lifetime_too_long');
    expect(timeRefusal({ iat: now, exp: now + 3600 }, now)).toBeNull();
  });

  it('finds the audience in a string or an array, exactly', () => {
    expect(audienceContains('https://gatehouse.example', 'https://gatehouse.example')).toBe(true);
    expect(audienceContains(['x', 'https://gatehouse.example'], 'https://gatehouse.example')).toBe(true);
    expect(audienceContains('https://gatehouse.example/', 'https://gatehouse.example')).toBe(false);
    expect(audienceContains(['https://GATEHOUSE.example'], 'https://gatehouse.example')).toBe(false);
    expect(audienceContains(undefined, 'https://gatehouse.example')).toBe(false);
    expect(audienceContains({ aud: 'https://gatehouse.example' }, 'https://gatehouse.example')).toBe(false);
  });
});
