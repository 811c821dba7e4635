import { basicCredentials } from './basic-auth';

const basic = (userPass: string): string => `Basic ${Buffer.from(userPass).toString('base64')}`;

describe('basicCredentials', () => {
  it('takes an id and a secret as they are when neither is form-encoded', () => {
    expect(basicCredentials(basic('3f0e2b6c-1d2e-4f5a-9b8c-7d6e5f4a3b2c:gh.abc_def-12.x'))).toEqual({
      id: '3f0e2b6c-1d2e-4f5a-9b8c-7d6e5f4a3b2c',
      secret: 'gh.abc_def-12.x',
    });
  });

  it('form-decodes each part as RFC 6749 section 2.3.1 has clients encode them', () => {
    expect(basicCredentials(basic('my%20client:a%3Ab+c%2Bd'))).toEqual({ id: 'my client', secret: 'a:b c+d' });
  });

  it('splits at the first colon: a colon in the secret arrives encoded or as is', () => {
    expect(basicCredentials(basic('client:se:cret'))).toEqual({ id: 'client', secret: 'se:cret' });
  });

  it('refuses malformed encoding, empty parts, no colon and other schemes', () => {
    expect(basicCredentials(basic('client:%E0%A4%A'))).toBeNull();
    expect(basicCredentials(basic(':secret'))).toBeNull();
    expect(basicCredentials(basic('client:'))).toBeNull();
    expect(basicCredentials(basic('client'))).toBeNull();
    expect(basicCredentials(`Bearer ${Buffer.from('a:b').toString('base64')}`)).toBeNull();
    expect(basicCredentials('Basic not*base64')).toBeNull();
  });

  it('reads the scheme in any case', () => {
    expect(basicCredentials(`bAsIc ${Buffer.from('a:b').toString('base64')}`)).toEqual({ id: 'a', secret: 'b' });
  });
});
