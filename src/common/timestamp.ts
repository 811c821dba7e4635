/** RFC 3339 section 5.6, e.g. `2026-11-21T16:08:12+01:00` (`T` and `Z` in either case). */
const ZONED_TIMESTAMP =
  /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(?:([Zz])|([+-])(\d{2}):(\d{2}))$/;

/** The instant in milliseconds since the epoch (digits past the millisecond dropped), or null when `text` is not one. */
export function parseZonedTimestamp(text: string): number | null {
  const match = ZONED_TIMESTAMP.exec(text);
  if (match === null) return null;
  const [year, month, day, hour, minute, second] = match.slice(1, 7).map(Number);
  const fraction = match[7] ?? '';
  const offsetHours = match[10] === undefined ? 0 : Number(match[10]);
  const offsetMinutes = match[11] === undefined ? 0 : Number(match[11]);
  if (month < 1 || month > 12 || day < 1 || day > daysIn(year, month)) return null;
  if (hour > 23 || minute > 59 || second > 59 || offsetHours > 23 || offsetMinutes > 59) return null;
  const sign = match[9] === '-' ? -1 : 1;
  const milliseconds = Number(fraction.padEnd(3, '0').slice(0, 3));
  // (Date.UTC reads the years 0-99 as 1900-1999: instants long past either way.)
  const local = Date.UTC(year, month - 1, day, hour, minute, second, milliseconds);
  return local - sign * (offsetHours * 60 + offsetMinutes) * 60_000;
}

function daysIn(year: number, month: number): number {
  return new Date(Date.UTC(2000, month, 0)).getUTCDate() - (month === 2 && !isLeapYear(year) ? 1 : 0);
}

function isLeapYear(year: number): boolean {
  return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
}
