import { type ReactNode, useState } from 'react';
import { ConfirmDialog } from './dialog';
import { Empty } from './feedback';

/** A column: its heading (each cell's label too, when a phone shows a row as a card) and what a row shows in it. */
export interface Column<T> {
  header: string;
  cell: (row: T) => ReactNode;
  className?: string;
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

/** A button of a row: either done at once (`onClick`) or after a confirmation (`confirm`). */
export interface RowAction<T> {
  label: string;
  /** The rest of its name for screen readers, naming the row: "Remove" + " dev@acme.test". */
  about: (row: T) => string;
  style?: 'primary' | 'danger';
  /** Whether this row offers it (default: every row). */
  when?: (row: T) => boolean;
  onClick?: (row: T) => void;
  confirm?: Confirmation<T>;
}

const BUTTON = {
  plain: 'button button-small',
  primary: 'button button-small button-primary',
  danger: 'button button-small button-danger',
} as const;

/**
 * A list as the console shows one (members, OAuth apps, webhooks, connected apps): a captioned table whose first
 * column heads each row, each cell labelled by its column so that below 640 px a row becomes a card (styles.css), the
 * row's buttons in a last column, and the confirmation dialog of those that ask first. No rows: `empty`, in words.
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
  rowClassName,
}: {
  caption: string;
  rows: readonly T[];
  rowKey: (row: T) => string;
  /** Each row's data-testid. */
  testId?: string;
  columns: ReadonlyArray<Column<T>>;
  actions?: ReadonlyArray<RowAction<T>>;
  empty: string;
  className?: string;
  rowClassName?: (row: T) => string | undefined;
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
                  {column.header}
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
              <tr key={rowKey(row)} data-testid={testId} className={rowClassName?.(row)}>
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
                      .map((action) => (
                        <button
                          key={action.label}
                          type="button"
                          className={BUTTON[action.style ?? 'plain']}
                          onClick={() => {
                            const confirm = action.confirm;
                            if (confirm !== undefined) setAsking({ confirm, row });
                            else action.onClick?.(row);
                          }}
                        >
                          {action.label}
                          <span className="visually-hidden"> {action.about(row)}</span>
                        </button>
                      ))}
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
