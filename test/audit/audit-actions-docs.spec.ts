import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { AUDIT_ACTIONS } from '../../src/audit/audit-event.entity';

/**
 * docs/operations.md#audit-trail's table names every action the code records, and nothing else: the list the entity
 * declares (AUDIT_ACTIONS, which the compiler holds every recorded action to) and, so that the list has no action left
 * behind, each one written somewhere in src/ besides that list.
 */
const ROOT = join(__dirname, '..', '..');
const DECLARED_IN = join(ROOT, 'src', 'audit', 'audit-event.entity.ts');

function sources(folder: string): string[] {
  return readdirSync(folder).flatMap((name) => {
    const path = join(folder, name);
    if (statSync(path).isDirectory()) return sources(path);
    return path.endsWith('.ts') && !path.endsWith('.spec.ts') && path !== DECLARED_IN ? [path] : [];
  });
}

/** The actions of the table under `## Audit trail`: its first column's code spans, in order. */
function documentedActions(): string[] {
  const page = readFileSync(join(ROOT, 'docs', 'operations.md'), 'utf8');
  const section = page.slice(page.indexOf('\n## Audit trail\n'));
  const table = section.slice(section.indexOf('\n| action'), section.indexOf('\n\n', section.indexOf('\n| action')));
  return table
    .split('\n')
    .slice(3) // the blank start, the header, the separator
    .map((row) => /^\| `([a-z_]+\.[a-z_]+)` +\|/.exec(row)?.[1] ?? `unreadable row: ${row}`);
}

describe('the audit actions in docs/operations.md', () => {
  it('lists every action the code records, once each, and no other', () => {
    const documented = documentedActions();
    expect(documented.length).toBeGreaterThan(0);
    expect(documented.filter((action, index) => documented.indexOf(action) !== index)).toEqual([]);
    expect([...documented].sort()).toEqual([...AUDIT_ACTIONS].sort());
  });

  it('declares only actions some code records', () => {
    const code = sources(join(ROOT, 'src')).map((path) => ({ path, text: readFileSync(path, 'utf8') }));
    const unrecorded = AUDIT_ACTIONS.filter(
      (action) =>
        !code.some(({ path, text }) => !relative(ROOT, path).includes('/dto/') && text.includes(`'${action}'`)),
    );
    expect(unrecorded).toEqual([]);
  });
});
