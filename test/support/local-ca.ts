import { execFileSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { findBinary } from './tools';

/** The openssl command line, or undefined when it is not installed. */
export const OPENSSL = findBinary(['/usr/bin/openssl', '/usr/local/bin/openssl'], ['version']);

/**
 * A certificate authority of this test run and one server certificate from it, for `127.0.0.1` and `localhost`: what a
 * TLS client that validates the server (curl in Apache, ...) trusts when given `caFile`. Made with the openssl command
 * line (P-256 keys, a day long); the directory is readable by all, so that a server that has dropped root (Apache's
 * `User`) can read the CA certificate.
 */
export class LocalCa {
  private constructor(
    readonly dir: string,
    /** The CA's certificate (PEM): the file to trust. */
    readonly caFile: string,
    /** The server's certificate (PEM), signed by the CA. */
    readonly cert: string,
    /** The server's private key (PEM). */
    readonly key: string,
  ) {}

  static create(): LocalCa {
    if (OPENSSL === undefined) throw new Error('openssl not found (apt-get install openssl)');
    const dir = mkdtempSync(join(tmpdir(), 'gatehouse-ca-'));
    chmodSync(dir, 0o755);
    const path = (name: string) => join(dir, name);
    const openssl = (...args: string[]) => execFileSync(OPENSSL, args, { stdio: ['ignore', 'ignore', 'pipe'] });
    const ecKey = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes'];
    openssl(
      'req',
      '-x509',
      ...ecKey,
      '-keyout',
      path('ca.key'),
      '-out',
      path('ca.pem'),
      '-days',
      '1',
      '-subj',
      '/CN=Gatehouse test CA',
    );
    openssl('req', ...ecKey, '-keyout', path('server.key'), '-out', path('server.csr'), '-subj', '/CN=127.0.0.1');
    writeFileSync(
      path('server.ext'),
      'subjectAltName = IP:127.0.0.1, DNS:localhost\nbasicConstraints = CA:FALSE\nextendedKeyUsage = serverAuth\n',
    );
    openssl(
      'x509',
      '-req',
      '-in',
      path('server.csr'),
      '-CA',
      path('ca.pem'),
      '-CAkey',
      path('ca.key'),
      '-CAcreateserial',
      '-out',
      path('server.pem'),
      '-days',
      '1',
      '-extfile',
      path('server.ext'),
    );
    chmodSync(path('ca.pem'), 0o644);
    return new LocalCa(
      dir,
      path('ca.pem'),
      readFileSync(path('server.pem'), 'utf8'),
      readFileSync(path('server.key'), 'utf8'),
    );
  }

  remove(): void {
    rmSync(this.dir, { recursive: true, force: true });
  }
}
