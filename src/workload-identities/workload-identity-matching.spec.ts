import { AppError } from '../common/errors';
import {
  checkedConditions,
  checkedSubject,
  conditionsMet,
  MatchCandidate,
  selectMatch,
  SubjectTokenClaims,
  WorkloadIdentityMessages as M,
} from './workload-identity-matching';

const GITHUB = 'https://token.actions.githubusercontent.com';
const SUB = 'repo:acme/deploy:environment:production';

/** A GitHub Actions OIDC token's claims (the ones conditions are usually written on). */
const claims = (extra: Record<string, unknown> = {}): SubjectTokenClaims => ({
  iss: GITHUB,
  sub: SUB,
  aud: 'https://gatehouse.example.com',
  exp: 2_000_000_000,
  iat: 1_999_999_700,
  repository: 'acme/deploy',
  repository_owner: 'acme',
  ref: 'refs/heads/main',
  environment: 'production',
  workflow: 'deploy',
  run_attempt: '1',
  ...extra,
});

let ids = 0;
const identity = (
  conditions: Record<string, string> = {},
  fields: Partial<MatchCandidate> = {},
): MatchCandidate & { id: string } => ({
  id: `wi-${++ids}`,
  organizationId: 'org-a',
  issuer: GITHUB,
  subject: SUB,
  conditions,
  ...fields,
});

function refusal(run: () => unknown): string {
  try {
    run();
  } catch (error) {
    if (error instanceof AppError) return `${error.status} ${error.code} ${error.message}`;
    throw error;
  }
  throw new Error('not refused');
}

describe('selectMatch', () => {
  it('matches iss and sub exactly, with no condition', () => {
    const only = identity();
    expect(selectMatch([only], claims())).toEqual({ outcome: 'matched', identity: only });
  });

  it.each([
    ['another sub', { sub: `${SUB}x` }],
    ['a sub that differs in case', { sub: SUB.toUpperCase() }],
    ['a sub with a trailing space', { sub: `${SUB} ` }],
    ['a prefix of the sub', { sub: 'repo:acme/deploy' }],
    ['another issuer', { iss: `${GITHUB}/` }],
  ])('matches nothing for %s (no wildcard, no normalisation)', (_case, extra) => {
    expect(selectMatch([identity()], claims(extra))).toEqual({ outcome: 'none' });
  });

  it('reads a "*" in a subject as that character, not as a wildcard', () => {
    expect(selectMatch([identity({}, { subject: 'repo:acme/*' })], claims({ sub: 'repo:acme/deploy' }))).toEqual({
      outcome: 'none',
    });
  });

  it('needs every condition, each an exact string match', () => {
    const both = identity({ repository: 'acme/deploy', ref: 'refs/heads/main' });
    expect(selectMatch([both], claims())).toEqual({ outcome: 'matched', identity: both });
    expect(selectMatch([both], claims({ ref: 'refs/heads/feature' }))).toEqual({ outcome: 'none' });
    expect(selectMatch([both], claims({ repository: 'ACME/deploy' }))).toEqual({ outcome: 'none' });
  });

  it.each([
    ['absent', undefined],
    ['a number', 1],
    ['a boolean', true],
    ['an array holding the value', ['1']],
    ['an object', { value: '1' }],
    ['null', null],
  ])('a claim that is %s does not meet a string condition', (_case, value) => {
    const token = claims();
    if (value === undefined) delete token.run_attempt;
    else token.run_attempt = value;
    expect(conditionsMet({ run_attempt: '1' }, token)).toBe(false);
  });

  it('does not read claims from the prototype chain', () => {
    expect(conditionsMet({ toString: 'x' }, claims())).toBe(false);
    expect(conditionsMet({ constructor: 'Object' }, claims())).toBe(false);
  });

  it('the most specific identity wins: the one with the most conditions', () => {
    const any = identity();
    const repository = identity({ repository: 'acme/deploy' });
    const main = identity({ repository: 'acme/deploy', ref: 'refs/heads/main' });
    expect(selectMatch([any, repository, main], claims())).toEqual({ outcome: 'matched', identity: main });
    // On another branch the most specific one does not match: the next one does.
    expect(selectMatch([any, repository, main], claims({ ref: 'refs/heads/dev' }))).toEqual({
      outcome: 'matched',
      identity: repository,
    });
  });

  it('equal specificity is ambiguous, whatever the conditions name', () => {
    const byRepository = identity({ repository: 'acme/deploy' });
    const byEnvironment = identity({ environment: 'production' });
    const less = identity();
    expect(selectMatch([less, byRepository, byEnvironment], claims())).toEqual({
      outcome: 'ambiguous',
      candidates: [byRepository, byEnvironment],
    });
    const twin = identity({ repository: 'acme/deploy' });
    expect(selectMatch([byRepository, twin], claims())).toEqual({
      outcome: 'ambiguous',
      candidates: [byRepository, twin],
    });
  });

  it('matches in two organizations are ambiguous, even when one is more specific', () => {
    const ours = identity({ repository: 'acme/deploy' });
    const theirs = identity({ repository: 'acme/deploy', ref: 'refs/heads/main' }, { organizationId: 'org-b' });
    expect(selectMatch([ours, theirs], claims())).toEqual({ outcome: 'ambiguous', candidates: [ours, theirs] });
    // Their identity that does not match leaves ours alone.
    const elsewhere = identity({ ref: 'refs/heads/other' }, { organizationId: 'org-b' });
    expect(selectMatch([ours, elsewhere], claims())).toEqual({ outcome: 'matched', identity: ours });
  });

  it('no candidate: none', () => {
    expect(selectMatch([], claims())).toEqual({ outcome: 'none' });
  });
});

describe('checkedSubject', () => {
  it('keeps the subject exactly as given', () => {
    expect(checkedSubject(` ${SUB}`)).toBe(` ${SUB}`);
    expect(checkedSubject('system:serviceaccount:ci:deployer')).toBe('system:serviceaccount:ci:deployer');
    expect(checkedSubject('é'.repeat(1024))).toBe('é'.repeat(1024));
  });

  it.each([
    ['empty', '', M.emptySubject],
    ['blank', '  \t', M.emptySubject],
    ['too long', 'a'.repeat(1025), M.subjectInvalid],
    ['with NUL', 'repo:a\u0000', M.subjectInvalid],
    ['with a line break', 'repo:a\nb', M.subjectInvalid],
    ['with a lone surrogate', 'repo:\ud800', M.subjectInvalid],
  ])('refuses a subject %s', (_case, subject, message) => {
    expect(refusal(() => checkedSubject(subject))).toBe(`400 INVALID_ARGUMENT ${message}`);
  });
});

describe('checkedConditions', () => {
  it('absent: none; claim names sorted', () => {
    expect(checkedConditions(undefined)).toEqual({});
    expect(checkedConditions({})).toEqual({});
    expect(Object.keys(checkedConditions({ ref: 'refs/heads/main', environment: 'prod', actor: 'octo' }))).toEqual([
      'actor',
      'environment',
      'ref',
    ]);
  });

  it('takes up to 16 conditions on any claim but the registered ones', () => {
    const sixteen = Object.fromEntries(Array.from({ length: 16 }, (_, i) => [`claim_${i}`, `v${i}`]));
    expect(checkedConditions(sixteen)).toEqual(sixteen);
    expect(checkedConditions({ 'https://example.com/claims/team': 'ops' })).toEqual({
      'https://example.com/claims/team': 'ops',
    });
  });

  it.each<[string, unknown, string]>([
    ['null', null, M.conditionsNotObject],
    ['an array', [['ref', 'x']], M.conditionsNotObject],
    ['a string', 'ref=refs/heads/main', M.conditionsNotObject],
    ['a number value', { run_attempt: 1 }, M.conditionNotString],
    ['a boolean value', { ref_protected: true }, M.conditionNotString],
    ['a null value', { environment: null }, M.conditionNotString],
    ['an array value', { ref: ['refs/heads/main'] }, M.conditionNotString],
    ['an object value', { ref: { eq: 'x' } }, M.conditionNotString],
    ['an empty value', { ref: '' }, M.conditionValueInvalid],
    ['a value too long', { ref: 'r'.repeat(1025) }, M.conditionValueInvalid],
    ['a value with a control character', { ref: 'a\u0007' }, M.conditionValueInvalid],
    ['an empty claim name', { '': 'x' }, M.claimNameInvalid],
    ['a claim name too long', { ['c'.repeat(129)]: 'x' }, M.claimNameInvalid],
    ['17 conditions', Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`c${i}`, 'v'])), M.tooManyConditions],
    ['a condition on constructor', { constructor: 'x' }, M.unavailableClaim],
    ['a condition on prototype', { prototype: 'x' }, M.unavailableClaim],
    ['a condition on __proto__', JSON.parse('{"__proto__": "x"}'), M.unavailableClaim],
    ...['iss', 'sub', 'aud', 'exp', 'nbf', 'iat', 'jti'].map((claim): [string, unknown, string] => [
      `a condition on ${claim}`,
      { [claim]: 'x' },
      M.reservedClaim,
    ]),
  ])('refuses %s', (_case, conditions, message) => {
    expect(refusal(() => checkedConditions(conditions))).toBe(`400 INVALID_ARGUMENT ${message}`);
  });

  it('names the registered claims in its message', () => {
    expect(M.reservedClaim).toBe('conditions may not name a registered claim (iss, sub, aud, exp, nbf, iat, jti)');
  });
});
