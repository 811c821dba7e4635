/** "The database cannot answer right now", not "this query is wrong": 503 UNAVAILABLE (docs/api.md). */
const UNAVAILABLE_ERRNO = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENOTFOUND']);
// PostgreSQL SQLSTATEs: 57014 query_canceled (statement_timeout), 57P01-57P03 shutdown / cannot
// connect now, 53300 too many connections, 08xxx connection exceptions.
const UNAVAILABLE_SQLSTATE = /^(57014|57P0[1-3]|53300|08...)$/;
const UNAVAILABLE_TEXT =
  /(timeout exceeded when trying to connect|Connection terminated|connection timeout|Query read timeout|SQLITE_BUSY|database is locked|Client has encountered a connection error|Client was closed and is not queryable|Cannot use a pool after calling end)/i;

export function isDatabaseUnavailable(error: unknown): boolean {
  for (let current = error, depth = 0; current && depth < 4; depth += 1) {
    const candidate = current as { code?: unknown; message?: unknown; driverError?: unknown; cause?: unknown };
    if (typeof candidate.code === 'string') {
      if (UNAVAILABLE_ERRNO.has(candidate.code) || UNAVAILABLE_SQLSTATE.test(candidate.code)) return true;
      if (candidate.code === 'SQLITE_BUSY') return true;
    }
    if (typeof candidate.message === 'string' && UNAVAILABLE_TEXT.test(candidate.message)) return true;
    current = candidate.driverError ?? candidate.cause;
  }
  return false;
}
