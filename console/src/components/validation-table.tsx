import type { components } from '../../../client';
import { formatTime } from '../format';

type Outcome = components['schemas']['ValidationOutcomeView'];

const MARKS: Record<string, { symbol: string; className: string }> = {
  Granted: { symbol: '✓', className: 'mark-granted' },
  Missing: { symbol: '✗', className: 'mark-missing' },
  Unknown: { symbol: '?', className: 'mark-unknown' },
};

/** A status as a symbol and a word (the word is what a screen reader says; colour is never the only cue). */
function Mark({ status, label = status }: { status: string; label?: string }) {
  const mark = MARKS[status] ?? MARKS.Unknown;
  return (
    <span className={`mark ${mark.className}`}>
      <span aria-hidden="true">{mark.symbol}</span> {label}
    </span>
  );
}

/** The fourteen checks (docs/integrations.md#the-fourteen-permission-checks), required ones flagged. */
export function ValidationTable({ validation, caption }: { validation: Outcome; caption: string }) {
  const missingRequired = validation.permissions.filter((p) => p.required && p.status === 'Missing');
  return (
    <section className="validation" aria-label={caption}>
      <ul className="summary">
        <li>
          Keys:{' '}
          <Mark status={validation.keys_status === 'Working' ? 'Granted' : 'Missing'} label={validation.keys_status} />
        </li>
        <li>
          Required permissions: <Mark status={validation.required_permissions_status} />
        </li>
        <li>
          {validation.can_save ? 'Can be saved.' : 'Cannot be saved'}
          {!validation.can_save && missingRequired.length > 0 && (
            <>: missing {missingRequired.map((p) => p.name).join(', ')}.</>
          )}
          {!validation.can_save && missingRequired.length === 0 && '.'}
        </li>
        <li className="muted">Checked {formatTime(validation.checked_at)}</li>
      </ul>
      <div className="table-wrap">
        <table className="responsive checks">
          <caption>{caption}</caption>
          <thead>
            <tr>
              <th scope="col">Permission</th>
              <th scope="col">Required</th>
              <th scope="col">Status</th>
            </tr>
          </thead>
          <tbody>
            {validation.permissions.map((permission) => (
              <tr
                key={permission.name}
                data-permission={permission.name}
                className={permission.required && permission.status === 'Missing' ? 'row-blocking' : undefined}
              >
                <th scope="row" data-label="Permission">
                  <code>{permission.name}</code>
                </th>
                <td data-label="Required">
                  {permission.required ? (
                    <strong className="required">Required</strong>
                  ) : (
                    <span className="muted">Optional</span>
                  )}
                </td>
                <td data-label="Status">
                  <Mark status={permission.status} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </section>
  );
}
