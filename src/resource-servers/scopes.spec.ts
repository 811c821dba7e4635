import { isScopeString, parseScope, scopesProblem } from './scopes';

describe('declared scopes', () => {
  it('parses NAME=DESCRIPTION at the first =, trimming the description', () => {
    expect(parseScope('tools:read= List tools ')).toEqual({ name: 'tools:read', description: 'List tools' });
    expect(parseScope('a=b=c')).toEqual({ name: 'a', description: 'b=c' });
  });

  it.each([
    ['no =', 'tools:read', /NAME=DESCRIPTION/],
    ['an empty name', '=x', /name must be/],
    ['a space', 'a b=x', /name must be/],
    ['a quote', 'a"b=x', /name must be/],
    ['a backslash', 'a\\b=x', /name must be/],
    ['non-ASCII', 'outils:lécture=x', /name must be/],
    ['65 characters', `${'a'.repeat(65)}=x`, /name must be/],
    ["one of Gatehouse's permissions", 'audit:read=x', /Gatehouse's own permissions/],
    ['an empty description', 'a=  ', /description/],
    ['a line break', 'a=one\ntwo', /description/],
    ['201 characters', `a=${'é'.repeat(201)}`, /description/],
  ])('refuses %s', (_case, value, problem) => {
    expect(parseScope(value)).toMatch(problem);
  });

  it('takes 200 characters (not UTF-16 units), and 64-character names', () => {
    expect(parseScope(`${'a'.repeat(64)}=${'😀'.repeat(200)}`)).toEqual({
      name: 'a'.repeat(64),
      description: '😀'.repeat(200),
    });
  });

  it('refuses a declaration with a duplicate or more than 32 scopes', () => {
    const scope = (name: string) => ({ name, description: 'x' });
    expect(scopesProblem([scope('a'), scope('b')])).toBeNull();
    expect(scopesProblem([scope('a'), scope('a')])).toMatch(/given twice/);
    expect(scopesProblem(Array.from({ length: 33 }, (_, i) => scope(`s${i}`)))).toMatch(/at most 32/);
  });

  it('reads a scope string: distinct scope-tokens separated by single spaces', () => {
    expect(isScopeString('tools:read api_keys:read')).toBe(true);
    for (const value of ['', 'a  b', ' a', 'a a', 'a"b', `${'a'.repeat(65)}`]) expect(isScopeString(value)).toBe(false);
  });
});
