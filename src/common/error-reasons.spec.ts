import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { HTTP_STATUS, wireCode } from './error-codes';
import { ERROR_REASONS, ErrorReason } from './error-reasons';

const ROOT = join(__dirname, '..', '..');

/** The rows of docs/api.md#errors' table: reason, status, code. */
function documentedReasons(): Map<string, { status: string; code: string }> {
  const api = readFileSync(join(ROOT, 'docs', 'api.md'), 'utf8');
  const section = api.slice(api.indexOf('## Errors\n'), api.indexOf('\n## ', api.indexOf('## Errors\n') + 1));
  const rows = new Map<string, { status: string; code: string }>();
  for (const line of section.split('\n')) {
    const cells = line.split('|').map((cell) => cell.trim());
    const reason = /^`([a-z0-9_]+)`$/.exec(cells[1] ?? '')?.[1];
    if (reason !== undefined) rows.set(reason, { status: cells[2], code: cells[3].replaceAll('`', '') });
  }
  return rows;
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.spec.ts') ? [path] : [];
  });
}

describe('the error catalogue', () => {
  const reasons = Object.keys(ERROR_REASONS) as ErrorReason[];

  it('is docs/api.md#errors: every reason a row with its status and code, and no row without a reason', () => {
    const documented = documentedReasons();
    expect([...documented.keys()].sort()).toEqual([...reasons].sort());
    for (const reason of reasons) {
      const { code } = ERROR_REASONS[reason];
      expect({ reason, ...documented.get(reason) }).toEqual({
        reason,
        status: String(HTTP_STATUS[code]),
        code: wireCode(code),
      });
    }
  });

  it('names only reasons some code throws (a quoted use outside the catalogue)', () => {
    const sources = sourceFiles(join(ROOT, 'src'))
      .filter((path) => !path.endsWith(join('common', 'error-reasons.ts')))
      .map((path) => readFileSync(path, 'utf8'))
      .join('\n');
    const unused = reasons.filter((reason) => !sources.includes(`'${reason}'`));
    expect(unused).toEqual([]);
  });

  it('holds snake_case names only', () => {
    for (const reason of reasons) expect(reason).toMatch(/^[a-z][a-z0-9]*(_[a-z0-9]+)*$/);
  });
});
