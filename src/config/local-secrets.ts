import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { AppConfiguration } from './configuration';

/** The secrets the service needs, either configured or (outside production) generated once and kept. */
export interface Secrets {
  apiKeyPepper: string;
  jwtPrivateKeyPem: string;
  integrationsEncryptionKey: string;
}

export const LOCAL_SECRETS_FILE = 'local-secrets.json';

function generate(): Secrets {
  const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  return {
    apiKeyPepper: randomBytes(32).toString('base64'),
    jwtPrivateKeyPem: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    integrationsEncryptionKey: randomBytes(32).toString('base64'),
  };
}

/**
 * Local runs need no secret set up by hand: the first start writes generated ones to
 * `<DATA_DIR>/local-secrets.json` (mode 0600) and every later start reads them back, so a
 * restart keeps tokens valid and stored keys readable. Production never gets here: configuration
 * refuses to start without API_KEY_PEPPER, JWT_PRIVATE_KEY and INTEGRATIONS_ENCRYPTION_KEY.
 */
function readOrCreateLocalSecrets(dataDir: string): Secrets {
  const file = join(dataDir, LOCAL_SECRETS_FILE);
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as Secrets;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  try {
    writeFileSync(file, JSON.stringify(generate(), null, 2), { flag: 'wx', mode: 0o600 });
  } catch (error) {
    // Another process created it first: use theirs.
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
  return JSON.parse(readFileSync(file, 'utf8')) as Secrets;
}

export function resolveSecrets(config: AppConfiguration): Secrets {
  const configured = {
    apiKeyPepper: config.apiKeys.pepper,
    jwtPrivateKeyPem: config.jwt.privateKeyPem,
    integrationsEncryptionKey: config.integrations.encryptionKey,
  };
  if (Object.values(configured).every((value) => value !== undefined)) return configured as Secrets;
  const local = readOrCreateLocalSecrets(config.dataDir);
  return {
    apiKeyPepper: configured.apiKeyPepper ?? local.apiKeyPepper,
    jwtPrivateKeyPem: configured.jwtPrivateKeyPem ?? local.jwtPrivateKeyPem,
    integrationsEncryptionKey: configured.integrationsEncryptionKey ?? local.integrationsEncryptionKey,
  };
}
