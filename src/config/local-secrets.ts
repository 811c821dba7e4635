import { generateKeyPairSync, randomBytes } from 'node:crypto';
import {
  closeSync,
  fstatSync,
  fsyncSync,
  linkSync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  Stats,
  statSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { AppConfiguration, ConfigurationError } from './configuration';

/** The secrets the service needs, either configured or (outside production) generated once and kept. */
export interface Secrets {
  apiKeyPepper: string;
  jwtPrivateKeyPem: string;
  integrationsEncryptionKey: string;
  /** Set when this process generated the local secrets file (the admin CLI warns: docs/operations.md#admin-cli). */
  generatedFile?: string;
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

/** This process's user, or undefined where there are no POSIX owners. */
const currentUid = (): number | undefined => (process.platform === 'win32' ? undefined : process.getuid?.());

/** Another user's file or directory could be read or replaced by them: refused, with the fix. */
function ownerProblem(path: string, stats: Stats): string | undefined {
  const uid = currentUid();
  if (uid === undefined || stats.uid === uid) return undefined;
  return `${path} is owned by uid ${stats.uid}, not by the user running Gatehouse (uid ${uid}); run \`chown ${uid} ${path}\` or run Gatehouse as its owner`;
}

/**
 * DATA_DIR holds the secrets file: whoever may write into it could swap the file for their own
 * secrets, so it must be this user's and writable by no one else (docs/operations.md#local-secrets).
 */
function checkDataDir(dataDir: string): void {
  if (currentUid() === undefined) return;
  const stats = statSync(dataDir);
  const problems: string[] = [];
  const owner = ownerProblem(dataDir, stats);
  if (owner !== undefined) problems.push(owner);
  const mode = stats.mode & 0o7777;
  if ((mode & 0o022) !== 0) {
    problems.push(
      `${dataDir} can be written by group or others (mode ${mode.toString(8).padStart(4, '0')}); run \`chmod go-w ${dataDir}\``,
    );
  }
  if (problems.length > 0) throw new ConfigurationError(problems);
}

/** The file's secrets, or undefined when there is no file yet. */
function readSecrets(file: string): Secrets | undefined {
  let fd: number;
  try {
    fd = openSync(file, 'r');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  try {
    // Group or others could read every key and token secret, or replace them.
    const stats = fstatSync(fd);
    const owner = ownerProblem(file, stats);
    if (owner !== undefined) throw new ConfigurationError([owner]);
    const mode = stats.mode & 0o777;
    if (process.platform !== 'win32' && (mode & 0o077) !== 0) {
      throw new ConfigurationError([
        `${file} can be read or written by group or others (mode ${mode.toString(8).padStart(4, '0')}); run \`chmod 600 ${file}\``,
      ]);
    }
    const text = readFileSync(fd, 'utf8');
    try {
      return JSON.parse(text) as Secrets;
    } catch {
      throw new ConfigurationError([
        `${file} is not valid JSON: restore it, or remove it to generate new local secrets (existing keys, tokens and stored credentials then stop working)`,
      ]);
    }
  } finally {
    closeSync(fd);
  }
}

/** Filesystems without hard links answer link() with one of these. */
const NO_HARD_LINKS = new Set(['EPERM', 'ENOTSUP', 'EOPNOTSUPP', 'ENOSYS']);

/**
 * Writes `secrets` unless the file exists, whole or not at all: a temporary file linked in under the final name, so of
 * instances starting together exactly one publishes (docs/operations.md#local-secrets).
 */
function publishOnce(file: string, dataDir: string, secrets: Secrets): void {
  const temporary = join(dataDir, `.${LOCAL_SECRETS_FILE}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`);
  const fd = openSync(temporary, 'wx', 0o600);
  try {
    writeFileSync(fd, JSON.stringify(secrets, null, 2));
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  try {
    linkSync(temporary, file);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? '';
    // Another instance published first: theirs are read below.
    if (code === 'EEXIST') return;
    if (!NO_HARD_LINKS.has(code)) throw error;
    // Still atomic for readers; only instances starting at the very same moment could publish twice.
    renameSync(temporary, file);
  } finally {
    try {
      unlinkSync(temporary);
    } catch {
      // already renamed
    }
  }
}

/** Local runs: secrets generated once into DATA_DIR and read back by every later start (never in production). */
function readOrCreateLocalSecrets(dataDir: string): Secrets {
  const file = join(dataDir, LOCAL_SECRETS_FILE);
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  checkDataDir(dataDir);
  const existing = readSecrets(file);
  if (existing !== undefined) return existing;
  publishOnce(file, dataDir, generate());
  const published = readSecrets(file);
  if (published === undefined) throw new Error(`${file} disappeared while it was being created`);
  return { ...published, generatedFile: file };
}

export function resolveSecrets(config: AppConfiguration): Secrets {
  const configured = {
    apiKeyPepper: config.apiKeys.pepper,
    jwtPrivateKeyPem: config.jwt.privateKeyPem,
    integrationsEncryptionKey: config.integrations.encryptionKey,
  };
  if (Object.values(configured).every((value) => value !== undefined)) return configured as Secrets;
  const local = readOrCreateLocalSecrets(config.dataDir);
  const secrets: Secrets = {
    apiKeyPepper: configured.apiKeyPepper ?? local.apiKeyPepper,
    jwtPrivateKeyPem: configured.jwtPrivateKeyPem ?? local.jwtPrivateKeyPem,
    integrationsEncryptionKey: configured.integrationsEncryptionKey ?? local.integrationsEncryptionKey,
  };
  if (local.generatedFile !== undefined) secrets.generatedFile = local.generatedFile;
  return secrets;
}
