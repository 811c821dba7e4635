import { discoveryUrls, metadataProblem, IssuerMetadata } from './issuer-discovery';
import { insecureUrlProblem, issuerShapeProblem } from './issuer-url';

describe('issuer URLs', () => {
  it('takes an absolute http(s) URL without credentials, query or fragment', () => {
    expect(issuerShapeProblem('https://login.example.com')).toBeNull();
    expect(issuerShapeProblem('https://login.example.com/realms/acme')).toBeNull();
    expect(issuerShapeProblem('login.example.com')).toMatch(/absolute URL/);
    expect(issuerShapeProblem('ftp://login.example.com')).toMatch(/https:\/\//);
    for (const bad of [
      'https://u:p@login.example.com',
      'https://login.example.com?x=1',
      'https://login.example.com#a',
    ]) {
      expect(issuerShapeProblem(bad)).toMatch(/no credentials, query, fragment/);
    }
    expect(issuerShapeProblem(`https://${'a'.repeat(250)}.com`)).toMatch(/1 to 255/);
  });

  it('fetches from https://, and from http:// on a loopback host outside production only', () => {
    expect(insecureUrlProblem('https://login.example.com', true)).toBeNull();
    expect(insecureUrlProblem('http://127.0.0.1:8080', false)).toBeNull();
    expect(insecureUrlProblem('http://localhost:8080', false)).toBeNull();
    expect(insecureUrlProblem('http://127.0.0.1:8080', true)).toMatch(/production/);
    expect(insecureUrlProblem('http://login.example.com', false)).toMatch(/not https/);
    expect(insecureUrlProblem('http://10.0.0.1', false)).toMatch(/not https/);
  });

  it('asks OpenID Connect discovery first, then RFC 8414 (inserted before the path)', () => {
    expect(discoveryUrls('https://login.example.com')).toEqual([
      'https://login.example.com/.well-known/openid-configuration',
      'https://login.example.com/.well-known/oauth-authorization-server',
    ]);
    expect(discoveryUrls('https://login.example.com/realms/acme')).toEqual([
      'https://login.example.com/realms/acme/.well-known/openid-configuration',
      'https://login.example.com/.well-known/oauth-authorization-server/realms/acme',
    ]);
  });

  it('needs the endpoints, the client authentication and an accepted ID token algorithm for people only', () => {
    const metadata: IssuerMetadata = {
      issuer: 'https://login.example.com',
      jwksUri: 'https://login.example.com/jwks',
      authorizationEndpoint: 'https://login.example.com/auth',
      tokenEndpoint: 'https://login.example.com/token',
      tokenEndpointAuthMethods: ['client_secret_basic'],
      idTokenSigningAlgs: ['RS256'],
      issParameterSupported: false,
      documentUrl: 'https://login.example.com/.well-known/openid-configuration',
    };
    const options = { production: true, allowedOrigins: [] };
    expect(metadataProblem(metadata, 'people', 'client_secret_basic', options)).toBeNull();
    expect(metadataProblem(metadata, 'people', 'client_secret_post', options)?.text).toMatch(
      /does not support client_secret_post/,
    );
    expect(metadataProblem({ ...metadata, tokenEndpoint: undefined }, 'people', null, options)?.text).toMatch(
      /no token_endpoint/,
    );
    expect(metadataProblem({ ...metadata, idTokenSigningAlgs: ['HS256'] }, 'people', null, options)?.text).toMatch(
      /signs ID tokens with HS256/,
    );
    expect(
      metadataProblem(
        { ...metadata, authorizationEndpoint: undefined, idTokenSigningAlgs: ['HS256'] },
        'workloads',
        null,
        options,
      ),
    ).toBeNull();
    // The endpoints on the issuer's origin, or one allowed: a document cannot send Gatehouse anywhere else.
    const elsewhere = { ...metadata, tokenEndpoint: 'https://oauth2.example.net/token' };
    expect(metadataProblem(elsewhere, 'people', null, options)).toEqual({
      text:
        'the token_endpoint https://oauth2.example.net/token of https://login.example.com/.well-known/openid-configuration ' +
        "is on https://oauth2.example.net, not the issuer's origin https://login.example.com",
      foreignOrigin: 'https://oauth2.example.net',
    });
    expect(
      metadataProblem(elsewhere, 'people', null, { ...options, allowedOrigins: ['https://oauth2.example.net'] }),
    ).toBeNull();
    expect(metadataProblem(elsewhere, 'workloads', null, options)).toBeNull();
  });
});
