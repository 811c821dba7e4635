import { readFileSync } from 'node:fs';
import { join } from 'node:path';

const ROOT = join(__dirname, '..', '..');
const read = (file: string) => JSON.parse(readFileSync(join(ROOT, file), 'utf8')) as Record<string, unknown>;

/**
 * npm 11 warns at `npm ci` about every dependency whose install script package.json's `allowScripts` does not decide on
 * (npm 12 will skip them): each one in the lock is approved or denied there, and no entry is left for a package that
 * no longer has one (README, set-up).
 */
describe('install scripts (package.json allowScripts)', () => {
  const allowScripts = read('package.json').allowScripts as Record<string, boolean>;
  const lockPackages = read('package-lock.json').packages as Record<
    string,
    { name?: string; hasInstallScript?: boolean }
  >;
  /** Registry names (an alias such as better-sqlite3-node20 is its real package), as npm matches them. */
  const withInstallScript = [
    ...new Set(
      Object.entries(lockPackages)
        .filter(([path, entry]) => path !== '' && entry.hasInstallScript === true)
        .map(([path, entry]) => entry.name ?? path.slice(path.lastIndexOf('node_modules/') + 'node_modules/'.length)),
    ),
  ].sort();

  it('decides on every locked dependency with an install script', () => {
    expect(withInstallScript.filter((name) => typeof allowScripts[name] !== 'boolean')).toEqual([]);
  });

  it('names no package that has no install script any more', () => {
    expect(Object.keys(allowScripts).sort()).toEqual(withInstallScript);
  });

  it('denies the ones that are not needed: install analytics, a build from source', () => {
    expect(allowScripts).toMatchObject({ '@scarf/scarf': false, '@parcel/watcher': false });
  });
});
