import { execFileSync } from 'node:child_process';
import { generateKeyPairSync, KeyObject, randomUUID, sign } from 'node:crypto';
import { mkdtempSync, readFileSync } from 'node:fs';
import { createServer, Server } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * A workload platform's token issuer for the token-exchange scenario (h): OIDC discovery and a JWKS over https on
 * loopback (the server runs in production mode, where an issuer must be https), with a self-signed certificate the
 * server and the CLI trust through NODE_EXTRA_CA_CERTS. It signs with two keys: RS256, the algorithm of the workload
 * tokens people exchange (GitHub Actions, GitLab CI, Kubernetes service accounts and Google sign theirs with RS256),
 * and ES256, to show what an issuer with elliptic-curve keys costs.
 */
export type WorkloadAlgorithm = 'RS256' | 'ES256';

export class WorkloadIssuer {
  private constructor(
    private readonly server: Server,
    readonly issuer: string,
    /** The certificate to trust (PEM file). */
    readonly caFile: string,
    private readonly keys: Record<WorkloadAlgorithm, { key: KeyObject; kid: string }>,
  ) {}

  static async start(): Promise<WorkloadIssuer> {
    const dir = mkdtempSync(join(tmpdir(), 'gatehouse-bench-issuer-'));
    const [certFile, keyFile] = [join(dir, 'cert.pem'), join(dir, 'key.pem')];
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'ec',
        '-pkeyopt',
        'ec_paramgen_curve:P-256',
        '-nodes',
        '-keyout',
        keyFile,
        '-out',
        certFile,
        '-days',
        '1',
        '-subj',
        '/CN=127.0.0.1',
        '-addext',
        'subjectAltName=IP:127.0.0.1',
      ],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    const pairs = {
      RS256: generateKeyPairSync('rsa', { modulusLength: 2048 }),
      ES256: generateKeyPairSync('ec', { namedCurve: 'P-256' }),
    };
    const keys = {
      RS256: { key: pairs.RS256.privateKey, kid: `bench-rs-${randomUUID().slice(0, 8)}` },
      ES256: { key: pairs.ES256.privateKey, kid: `bench-es-${randomUUID().slice(0, 8)}` },
    };
    const jwks = JSON.stringify({
      keys: (['RS256', 'ES256'] as const).map((alg) => ({
        ...pairs[alg].publicKey.export({ format: 'jwk' }),
        kid: keys[alg].kid,
        alg,
        use: 'sig',
      })),
    });
    let issuer = '';
    const server = createServer({ cert: readFileSync(certFile), key: readFileSync(keyFile) }, (req, res) => {
      res.setHeader('content-type', 'application/json');
      if (req.url === '/.well-known/openid-configuration') {
        res.end(
          JSON.stringify({
            issuer,
            jwks_uri: `${issuer}/jwks`,
            authorization_endpoint: `${issuer}/auth`,
            token_endpoint: `${issuer}/token`,
            response_types_supported: ['code'],
            subject_types_supported: ['public'],
            id_token_signing_alg_values_supported: ['RS256', 'ES256'],
          }),
        );
      } else if (req.url === '/jwks') res.end(jwks);
      else res.writeHead(404).end('{}');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    issuer = `https://127.0.0.1:${(server.address() as { port: number }).port}`;
    return new WorkloadIssuer(server, issuer, certFile, keys);
  }

  /** A workload's token, as a CI platform issues one: `sub`, for `audience`, valid an hour. */
  token(subject: string, audience: string, alg: WorkloadAlgorithm): string {
    const { key, kid } = this.keys[alg];
    const now = Math.floor(Date.now() / 1000);
    const part = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');
    const input = `${part({ alg, typ: 'JWT', kid })}.${part({
      iss: this.issuer,
      sub: subject,
      aud: audience,
      iat: now,
      exp: now + 3600,
      jti: randomUUID(),
    })}`;
    const signature = sign('sha256', Buffer.from(input), alg === 'ES256' ? { key, dsaEncoding: 'ieee-p1363' } : key);
    return `${input}.${signature.toString('base64url')}`;
  }

  close(): void {
    this.server.close();
  }
}
