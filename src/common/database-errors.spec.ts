import { QueryFailedError } from 'typeorm';
import { isDatabaseUnavailable } from './database-errors';

/** What pg, pg-pool and TypeORM raise when PostgreSQL is down or silent: all 503 UNAVAILABLE. */
describe('isDatabaseUnavailable', () => {
  const errno = (code: string) => Object.assign(new Error(`connect ${code} 127.0.0.1:5432`), { code });
  const sqlstate = (code: string) => Object.assign(new Error('server error'), { code });
  const wrapped = (error: Error) => new QueryFailedError('SELECT 1', [], error);

  it.each([
    ['connection refused', errno('ECONNREFUSED')],
    ['connection reset', errno('ECONNRESET')],
    ['pool: no connection in time', new Error('timeout exceeded when trying to connect')],
    ['pool: connect timed out', new Error('Connection terminated due to connection timeout')],
    ['connection lost mid-query', wrapped(new Error('Connection terminated unexpectedly'))],
    ['query_timeout (silent server)', wrapped(new Error('Query read timeout'))],
    ['statement_timeout (57014)', wrapped(sqlstate('57014'))],
    ['server shutting down (57P01)', wrapped(sqlstate('57P01'))],
    ['too many connections (53300)', sqlstate('53300')],
    ['connection exception (08006)', sqlstate('08006')],
    ['client dropped after a timeout', wrapped(new Error('Client was closed and is not queryable'))],
    ['client broken', wrapped(new Error('Client has encountered a connection error and is not queryable'))],
    ['SQLite busy', Object.assign(new Error('database is locked'), { code: 'SQLITE_BUSY' })],
  ])('%s', (_name, error) => {
    expect(isDatabaseUnavailable(error)).toBe(true);
  });

  it.each([
    ['unique violation (23505)', wrapped(sqlstate('23505'))],
    ['syntax error (42601)', wrapped(sqlstate('42601'))],
    ['a bug', new TypeError('Cannot read properties of undefined')],
    ['not an error', 'ECONNREFUSED'],
    ['nothing', undefined],
  ])('not: %s', (_name, error) => {
    expect(isDatabaseUnavailable(error)).toBe(false);
  });
});
