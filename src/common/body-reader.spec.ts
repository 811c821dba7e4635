import { MAX_JSON_DEPTH } from './json-body';
import { parseForm, parseJson } from './body-reader';

const bytes = (text: string): Buffer => Buffer.from(text, 'utf8');

describe('parseJson', () => {
  it('parses an object or an array; an empty body is {}', () => {
    expect(parseJson(bytes('{"label":"ci"}'))).toEqual({ label: 'ci' });
    expect(parseJson(bytes(' \n[1]'))).toEqual([1]);
    expect(parseJson(bytes('\uFEFF{}'))).toEqual({});
    expect(parseJson(bytes(''))).toEqual({});
    expect(parseJson(bytes(' \r\n'))).toEqual({});
  });

  it('refuses nesting past the bound before parsing, and anything but an object or array, as 400 body errors', () => {
    expect(() => parseJson(bytes('['.repeat(MAX_JSON_DEPTH + 1)))).toThrow(
      expect.objectContaining({ status: 400, type: 'entity.too.deep' }),
    );
    for (const text of ['"x"', '1', 'null', '{"a":', '[1,]']) {
      expect(() => parseJson(bytes(text))).toThrow(
        expect.objectContaining({ status: 400, type: 'entity.parse.failed' }),
      );
    }
  });
});

describe('parseForm', () => {
  it('reads every parameter, a repeated one as an array, __proto__ as a name like any other', () => {
    const form = parseForm(bytes('grant_type=client_credentials&scope=a+b&x=1&x=2&__proto__=p'));
    expect({ ...form }).toEqual({ grant_type: 'client_credentials', scope: 'a b', x: ['1', '2'], ['__proto__']: 'p' });
    expect(Object.getPrototypeOf(form)).toBeNull();
  });
});
