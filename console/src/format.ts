/** With the time zone: a time without one is ambiguous in a team across zones (and against the API's UTC). */
const dateTime = new Intl.DateTimeFormat(undefined, {
  year: 'numeric',
  month: 'short',
  day: 'numeric',
  hour: '2-digit',
  minute: '2-digit',
  timeZoneName: 'short',
});

export function formatTime(iso: string | null | undefined): string {
  if (iso === null || iso === undefined) return '';
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? iso : dateTime.format(date);
}

/** "in 3 days", "2 hours ago". */
export function relativeTime(iso: string, now = Date.now()): string {
  const seconds = Math.round((Date.parse(iso) - now) / 1000);
  const units: Array<[Intl.RelativeTimeFormatUnit, number]> = [
    ['day', 86400],
    ['hour', 3600],
    ['minute', 60],
  ];
  const format = new Intl.RelativeTimeFormat(undefined, { numeric: 'auto' });
  // Half a minute short of a unit still counts as one: a grace of an hour read a second later is "in 1 hour",
  // as the dialog and the notice say, not "in 60 minutes".
  for (const [unit, size] of units) {
    if (Math.abs(seconds) >= size - 30) return format.format(Math.round(seconds / size), unit);
  }
  return format.format(seconds, 'second');
}

export function formatDuration(seconds: number): string {
  if (seconds % 86400 === 0) return `${seconds / 86400} day${seconds === 86400 ? '' : 's'}`;
  if (seconds % 3600 === 0) return `${seconds / 3600} hour${seconds === 3600 ? '' : 's'}`;
  if (seconds % 60 === 0) return `${seconds / 60} minute${seconds === 60 ? '' : 's'}`;
  return `${seconds} seconds`;
}

/** A key id as the key string writes it: 32 hex digits, no hyphens (`dev.<id>.<secret>.<crc>`). */
export function compactId(id: string): string {
  return id.replaceAll('-', '');
}

/** How dialogs and notices name a key: its label and the start of its id, so two keys of one label differ. */
export function keyName(key: { id: string; label: string }): string {
  const short = `${compactId(key.id).slice(0, 8)}…`;
  return key.label === '' ? `key ${short}` : `“${key.label}” (${short})`;
}

const WINDOWS: Array<[number, string]> = [
  [86400, 'day'],
  [3600, 'hour'],
  [60, 'minute'],
  [1, 'second'],
];

/** A key's rate limit as a person says it: "100 requests per minute", "1 request per 90 seconds". */
export function formatRateLimit({ requests, window_seconds }: { requests: number; window_seconds: number }): string {
  const what = `${requests} request${requests === 1 ? '' : 's'}`;
  const unit = WINDOWS.find(([size]) => window_seconds === size);
  if (unit !== undefined) return `${what} per ${unit[1]}`;
  const whole = WINDOWS.find(([size]) => size > 1 && window_seconds % size === 0);
  return whole === undefined
    ? `${what} per ${window_seconds} seconds`
    : `${what} per ${window_seconds / whole[0]} ${whole[1]}s`;
}
