import type { AuditEventView } from './dto/audit-event.view';

/** The longest range one export covers (docs/api.md#exporting-audit-events): a month; longer takes several. */
export const MAX_AUDIT_EXPORT_DAYS = 31;
/** Events read per statement while an export streams: memory holds one batch, whatever the range. */
export const AUDIT_EXPORT_BATCH = 500;

/** The CSV's columns: every field of an event as the list shows it, in its order. */
export const CSV_COLUMNS: ReadonlyArray<keyof AuditEventView> = [
  'id',
  'occurred_at',
  'action',
  'reason',
  'actor_user_id',
  'actor_email',
  'actor_api_key_id',
  'target_type',
  'target_id',
  'target_email',
  'target_label',
  'previous_api_key_id',
  'previous_api_key_expires_at',
  'client_ip',
  'request_id',
  'changes',
];

/** What a spreadsheet would read as a formula at the start of a cell (OWASP's CSV injection list). */
const FORMULA_START = /^[=+\-@\t\r]/;

/**
 * One CSV cell (RFC 4180): quoted when it holds a comma, quote or line break, quotes doubled. A cell a spreadsheet
 * would run as a formula (`=`, `+`, `-`, `@`, tab, carriage return first: a key's label, a request id, a workload's
 * subject are the callers' text) gets a leading `'` and quotes, so it reads as text. Null is an empty cell; an object
 * (`changes`) its JSON.
 */
export function csvCell(value: unknown): string {
  if (value === null || value === undefined) return '';
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  if (FORMULA_START.test(text)) return `"'${text.replaceAll('"', '""')}"`;
  return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

export function csvHeader(): string {
  return `${CSV_COLUMNS.join(',')}\r\n`;
}

export function csvRow(event: AuditEventView): string {
  return `${CSV_COLUMNS.map((column) => csvCell(event[column])).join(',')}\r\n`;
}

/** The download's file name: the range's days, `audit-events_2026-11-01_2026-12-01.csv`. */
export function exportFileName(since: Date, until: Date, format: 'csv' | 'json'): string {
  const day = (date: Date) => date.toISOString().slice(0, 10);
  return `audit-events_${day(since)}_${day(until)}.${format}`;
}
