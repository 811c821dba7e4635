import { DataSource } from 'typeorm';
import type { TestApp } from './test-app';

/** How many rows `table` holds: what a test compares before and after to show that nothing was left behind. */
export const rowCount = async (t: TestApp, table: string): Promise<number> =>
  Number((await t.get(DataSource).query(`SELECT COUNT(*) AS n FROM ${table}`))[0].n);

/** What a refused console sign-in must not leave behind: users, memberships, sign-in links, audit entries. */
export async function signInRows(t: TestApp): Promise<Record<string, number>> {
  return {
    users: await rowCount(t, 'users'),
    memberships: await rowCount(t, 'memberships'),
    links: await rowCount(t, 'console_sign_in_links'),
    audit: await rowCount(t, 'audit_events'),
  };
}
