import { parseDynamicRegistration, redirectUriProblem, RegistrationRefused } from './client-registration';

describe('redirect URIs of registered clients (OAuth 2.1 section 2.3.1, RFC 8252)', () => {
  it.each([
    'https://app.example.com/cb',
    'https://app.example.com:8443/cb?x=1',
    'http://127.0.0.1:33418/callback',
    'http://127.5.6.7/cb',
    'http://[::1]:8080/cb',
    'http://localhost:3000/cb',
    // RFC 8252 section 7.1: a native app's private-use scheme, a reverse domain name or a known editor's.
    'com.example.app:/oauth2redirect',
    'com.example.app://callback',
    'cursor://anysphere.cursor-mcp/oauth/callback',
    'vscode://vscode.github-authentication/did-authenticate',
    'vscode-insiders://callback',
  ])('accepts %s', (uri) => {
    expect(redirectUriProblem(uri)).toBeNull();
  });

  it.each(['com.example.app:/oauth2redirect', 'cursor://anysphere.cursor-mcp/oauth/callback'])(
    "refuses %s for a confidential client (a web app's)",
    (uri) => {
      expect(redirectUriProblem(uri, { privateUseSchemes: false })).toMatch(
        /must be https, or http on a loopback host \(/,
      );
    },
  );

  it.each([
    ['http://app.example.com/cb', /must be https, http on a loopback host/],
    ['http://10.0.0.1/cb', /must be https/],
    ['http://localhost.example.com/cb', /must be https/],
    ['javascript:alert(1)', /must be https/],
    ['JavaScript://comment%0Aalert(1)', /must be https/],
    ['data:text/html,<script>alert(1)</script>', /must be https/],
    ['file:///etc/passwd', /must be https/],
    ['blob:https://app.example.com/uuid', /must be https/],
    ['myapp:/callback', /a reverse domain name \(com\.example\.app:\/callback\) or cursor, vscode/],
    ['ftp://files.example.com/cb', /must be https/],
    ['com.example.app:/cb#x', /has a fragment/],
    ['https://app.example.com/cb#frag', /has a fragment/],
    ['https://app.example.com/cb#', /has a fragment/],
    ['https://user@app.example.com/cb', /has credentials/],
    ['/relative', /not an absolute URL/],
    [`https://a.example/${'x'.repeat(2000)}`, /longer than 2000 characters/],
  ])('refuses %s', (uri, problem) => {
    expect(redirectUriProblem(uri)).toMatch(problem);
  });
});

describe('dynamic registration metadata (RFC 7591 section 2)', () => {
  const refusal = (body: unknown): RegistrationRefused => {
    try {
      parseDynamicRegistration(body);
    } catch (error) {
      if (error instanceof RegistrationRefused) return error;
    }
    throw new Error('not refused');
  };

  it('keeps the name and distinct redirect URIs, and ignores what it does not keep', () => {
    expect(
      parseDynamicRegistration({
        client_name: '  Agent  ',
        redirect_uris: ['https://a.example/cb', 'https://a.example/cb'],
        scope: 'tools:read',
        contacts: ['x@example.com'],
      }),
    ).toEqual({ name: 'Agent', redirectUris: ['https://a.example/cb'] });
  });

  it('names an invalid redirect URI invalid_redirect_uri, other metadata invalid_client_metadata', () => {
    expect(refusal({ redirect_uris: ['http://a.example/cb'] }).reason).toBe('client_redirect_uri_invalid');
    expect(refusal({ redirect_uris: ['https://a.example/cb'], client_name: 7 }).reason).toBe('client_metadata_invalid');
    expect(refusal(null).reason).toBe('client_metadata_invalid');
    expect(refusal({ redirect_uris: ['https://a.example/cb'], grant_types: 'authorization_code' }).reason).toBe(
      'client_metadata_invalid',
    );
  });
});
