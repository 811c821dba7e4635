import type { DataSource } from 'typeorm';
import { DATABASE_KIND } from './test-app';

/**
 * Makes every audit insert of `action` fail inside the transaction, by a trigger in the database (so
 * the failure happens where a real one would: after the change itself was written); returns the undo.
 */
export async function failAuditOf(dataSource: DataSource, action: string): Promise<() => Promise<void>> {
  if (DATABASE_KIND === 'sqlite') {
    await dataSource.query(
      `CREATE TRIGGER audit_refuses BEFORE INSERT ON audit_events WHEN NEW.action = '${action}'
       BEGIN SELECT RAISE(ABORT, 'audit store refused'); END`,
    );
    return async () => void (await dataSource.query('DROP TRIGGER audit_refuses'));
  }
  await dataSource.query(
    `CREATE OR REPLACE FUNCTION audit_refuses() RETURNS trigger LANGUAGE plpgsql
     AS $$ BEGIN RAISE EXCEPTION 'audit store refused'; END $$`,
  );
  await dataSource.query(
    `CREATE TRIGGER audit_refuses BEFORE INSERT ON audit_events FOR EACH ROW
     WHEN (NEW.action = '${action}') EXECUTE FUNCTION audit_refuses()`,
  );
  return async () => void (await dataSource.query('DROP TRIGGER audit_refuses ON audit_events'));
}

/** Runs `during` while audit inserts of `action` fail. */
export async function duringAuditFailure<T>(
  dataSource: DataSource,
  action: string,
  during: () => Promise<T>,
): Promise<T> {
  const undo = await failAuditOf(dataSource, action);
  try {
    return await during();
  } finally {
    await undo();
  }
}

/** Makes every revocation-feed event insert fail inside its transaction (the outbox's write); returns the undo. */
export async function failFeedEvents(dataSource: DataSource): Promise<() => Promise<void>> {
  if (DATABASE_KIND === 'sqlite') {
    await dataSource.query(
      "CREATE TRIGGER ssf_refuses BEFORE INSERT ON ssf_events BEGIN SELECT RAISE(ABORT, 'refused'); END",
    );
    return async () => void (await dataSource.query('DROP TRIGGER ssf_refuses'));
  }
  await dataSource.query(
    `CREATE OR REPLACE FUNCTION ssf_refuses() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'refused'; END $$;
     CREATE TRIGGER ssf_refuses BEFORE INSERT ON ssf_events FOR EACH ROW EXECUTE FUNCTION ssf_refuses()`,
  );
  return async () => void (await dataSource.query('DROP TRIGGER ssf_refuses ON ssf_events'));
}
