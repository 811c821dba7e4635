/** Microseconds since the epoch; a plain number is exact to year 287,396 (docs/adr/0018-audit-event-pages.md). */
export type Micros = number;

const ISO = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(?:(Z)|([+-])(\d{2}):(\d{2}))$/;

/** Both databases and toISOString write four-digit years only. */
const MIN_MS = Date.parse('0001-01-01T00:00:00.000Z');
const MAX_MS = Date.parse('9999-12-31T23:59:59.999Z');

/** ISO 8601 with seconds and a zone designator, e.g. `2026-11-23T10:00:00Z`. */
export function parseInstant(text: string): Micros | null {
  const match = ISO.exec(text);
  if (match === null) return null;
  const [, y, mo, d, h, mi, s, fraction = '', zulu, sign, oh, om] = match;
  const [year, month, day, hour, minute, second] = [y, mo, d, h, mi, s].map(Number);
  const utc = new Date(0);
  utc.setUTCFullYear(year, month - 1, day);
  utc.setUTCHours(hour, minute, second, 0);
  // Date normalises an impossible field (Feb 30 -> Mar 2): such a date was not a date.
  if (
    utc.getUTCFullYear() !== year ||
    utc.getUTCMonth() !== month - 1 ||
    utc.getUTCDate() !== day ||
    utc.getUTCHours() !== hour ||
    utc.getUTCMinutes() !== minute ||
    utc.getUTCSeconds() !== second
  ) {
    return null;
  }
  let offsetMinutes = 0;
  if (zulu === undefined) {
    if (Number(oh) > 23 || Number(om) > 59) return null;
    offsetMinutes = (sign === '-' ? -1 : 1) * (Number(oh) * 60 + Number(om));
  }
  const ms = utc.getTime() - offsetMinutes * 60_000;
  const digits = fraction.padEnd(9, '0');
  const micros = Number(digits.slice(0, 6)) + (Number(digits.slice(6)) > 0 ? 1 : 0);
  const total = ms * 1000 + micros;
  if (total < MIN_MS * 1000 || total > MAX_MS * 1000 + 999) return null;
  return total;
}

export function microsOf(date: Date): Micros {
  return date.getTime() * 1000;
}
