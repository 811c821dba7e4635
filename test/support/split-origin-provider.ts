import { createServer, Server } from 'node:http';
import { listenOnLoopback } from './ports';

/**
 * An identity provider shaped as Google's (docs/adr/0047-issuer-origins-and-bound-sso-links.md): its discovery document
 * is at its issuer, on one loopback origin, and places the token endpoint and the key set on a second one, as Google
 * places them on oauth2.googleapis.com and www.googleapis.com. Gatehouse trusts it only with that origin allowed.
 * Discovery is all it answers: the second origin listens, and answers 404.
 */
export class SplitOriginProvider {
  private constructor(
    private readonly servers: Server[],
    /** The issuer, on the first origin (its sign-in page too). */
    readonly issuer: string,
    /** The second origin, of the token endpoint and the key set. */
    readonly otherOrigin: string,
  ) {}

  static async start(): Promise<SplitOriginProvider> {
    const elsewhere = createServer((_req, res) => void res.writeHead(404).end());
    const otherOrigin = `http://127.0.0.1:${await listenOnLoopback(elsewhere)}`;
    let issuer = '';
    const home = createServer((req, res) => {
      if (req.url !== '/.well-known/openid-configuration') return void res.writeHead(404).end();
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          issuer,
          authorization_endpoint: `${issuer}/o/oauth2/v2/auth`,
          token_endpoint: `${otherOrigin}/token`,
          jwks_uri: `${otherOrigin}/oauth2/v3/certs`,
          id_token_signing_alg_values_supported: ['RS256'],
        }),
      );
    });
    issuer = `http://127.0.0.1:${await listenOnLoopback(home)}`;
    return new SplitOriginProvider([home, elsewhere], issuer, otherOrigin);
  }

  stop(): void {
    for (const server of this.servers) {
      server.closeAllConnections();
      server.close();
    }
  }
}
