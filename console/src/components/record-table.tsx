import { type ReactNode, useState } from 'react';
import { Link } from '../router';
import { ConfirmDialog } from './dialog';
import { Empty } from './feedback';

/** A column: its heading (each cell's label too, when a phone shows a row as a card) and what a row shows in it. */
export interface Column<T> {
  header: string;
  cell: (row: T) => ReactNode;
  className?: string;
  /** Heard by screen readers but not shown (a column of buttons); its cells keep the label on a phone. */
  hideHeader?: boolean;
}

/** What a row's action asks before it is done: the dialog's title, text and button, and the work it confirms. */
export interface Confirmation<T> {
  title: (row: T) => string;
  body: (row: T) => ReactNode;
  confirmLabel: string;
  danger?: boolean;
  /** May fail: the dialog shows the refusal and stays open. */
  run: (row: T) => Promise<void>;
}

/** A button of a row: done at once (`onClick`), after a confirmation (`confirm`), or a link to a page (`to`). */
export interface RowAction<T> {
  label: string;
  /** The rest of its name for screen readers, naming the row: "Remove" + " dev@acme.test". */
  about: (row: T) => string;
  style?: 'primary' | 'danger';
  /** Whether this row offers it (default: every row). */
  when?: (row: T) => boolean;
  onClick?: (row: T) => void;
  confirm?: Confirmation<T>;
  to?: (row: T) => string;
}

const BUTTON = {
  plain: 'button button-small',
  primary: 'button button-small button-primary',
  danger: 'button button-small button-danger',
} as const;

/**
 * A list as the console shows one (keys, workload identities, members, integrations, OAuth apps, webhooks, connected
 * apps, the busiest credentials): a captioned table whose first column heads each row, each cell labelled by its column
 * so that below 640 px a row becomes a card (styles.css), the row's buttons in a last column, and the confirmation
 * dialog of those that ask first. No rows: `empty`, in words.
 */
export function RecordTable<T>({
  caption,
  rows,
  rowKey,
  testId,
  columns,
  actions = [],
  empty,
  className,
  rowProps,
}: {
  caption: string;
  rows: readonly T[];
  rowKey: (row: T) => string;
  /** Each row's data-testid. */
  testId?: string;
  columns: ReadonlyArray<Column<T>>;
  actions?: ReadonlyArray<RowAction<T>>;
  empty: ReactNode;
  className?: string;
  /** More attributes of a row's `<tr>`: `data-key-id`, `aria-current`. */
  rowProps?: (row: T) => { [data: `data-${string}`]: string; 'aria-current'?: 'true' };
}) {
  const [asking, setAsking] = useState<{ confirm: Confirmation<T>; row: T }>();
  if (rows.length === 0) return <Empty>{empty}</Empty>;
  const [first, ...rest] = columns;
  return (
    <>
      <div className="table-wrap">
        <table className={className === undefined ? 'responsive' : `responsive ${className}`}>
          <caption className="visually-hidden">{caption}</caption>
          <thead>
            <tr>
              {columns.map((column) => (
                <th key={column.header} scope="col" className={column.className}>
                  {column.hideHeader === true ? (
                    <span className="visually-hidden">{column.header}</span>
                  ) : (
                    column.header
                  )}
                </th>
              ))}
              {actions.length > 0 && (
                <th scope="col">
                  <span className="visually-hidden">Actions</span>
                </th>
              )}
            </tr>
          </thead>
          <tbody>
            {rows.map((row) => (
              <tr key={rowKey(row)} data-testid={testId} {...rowProps?.(row)}>
                <th scope="row" data-label={first.header} className={first.className}>
                  {first.cell(row)}
                </th>
                {rest.map((column) => (
                  <td key={column.header} data-label={column.header} className={column.className}>
                    {column.cell(row)}
                  </td>
                ))}
                {actions.length > 0 && (
                  <td data-label="Actions" className="row-actions">
                    {actions
                      .filter((action) => action.when?.(row) ?? true)
                      .map((action) => {
                        const name = (
                          <>
                            {action.label}
                            <span className="visually-hidden"> {action.about(row)}</span>
                          </>
                        );
                        const className = BUTTON[action.style ?? 'plain'];
                        return action.to !== undefined ? (
                          <Link key={action.label} to={action.to(row)} className={className}>
                            {name}
                          </Link>
                        ) : (
                          <button
                            key={action.label}
                            type="button"
                            className={className}
                            onClick={() => {
                              const confirm = action.confirm;
                              if (confirm !== undefined) setAsking({ confirm, row });
                              else action.onClick?.(row);
                            }}
                          >
                            {name}
                          </button>
                        );
                      })}
                  </td>
                )}
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {asking !== undefined && (
        <ConfirmDialog
          title={asking.confirm.title(asking.row)}
          confirmLabel={asking.confirm.confirmLabel}
          danger={asking.confirm.danger}
          onClose={() => setAsking(undefined)}
          onConfirm={() => asking.confirm.run(asking.row)}
        >
          {asking.confirm.body(asking.row)}
        </ConfirmDialog>
      )}
    </>
  );
}
