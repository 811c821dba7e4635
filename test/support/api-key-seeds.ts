import { randomUUID } from 'node:crypto';
import { Client } from 'pg';
import { DataSource } from 'typeorm';
import { DATABASE_KIND, POSTGRES_URL, TestApp, TestUser } from './test-app';

/** `count` REVOKED keys of `owner`, newer than any key made through the API, written in one statement. */
export async function seedRevoked(t: TestApp, owner: TestUser, count: number): Promise<void> {
  const hash = 'ab'.repeat(32);
  if (DATABASE_KIND === 'sqlite') {
    await t.get(DataSource).query(
      `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?)
       INSERT INTO api_keys (id, organization_id, user_id, label, secret_hash, status, scopes, created_at, updated_at, revoked_at)
       SELECT printf('00000000-0000-4000-8000-%012x', i), ?, ?, 'bulk', ?, 'REVOKED', 0, t, t, t
       FROM (SELECT i, strftime('%Y-%m-%dT%H:%M:%fZ', '2030-01-01', '+' || i || ' seconds') AS t FROM n)`,
      [count, owner.organizationId, owner.userId, hash],
    );
    // No ANALYZE: a SQLite database in service has no statistics either.
    return;
  }
  const schema = t.database.env.DATABASE_SCHEMA!;
  // A statement longer than the service's statement timeout: on a connection of its own.
  const client = new Client({ connectionString: POSTGRES_URL, options: `-c search_path=${schema}` });
  await client.connect();
  try {
    await client.query(
      `INSERT INTO api_keys (id, organization_id, user_id, label, secret_hash, status, scopes, created_at, updated_at, revoked_at)
       SELECT ('00000000-0000-4000-8000-' || lpad(to_hex(i), 12, '0'))::uuid, $1, $2, 'bulk', $3, 'REVOKED', 0, t, t, t
       FROM (SELECT i, timestamptz '2030-01-01T00:00:00Z' + i * interval '1 second' AS t
             FROM generate_series(1, $4::int) AS i) s`,
      [owner.organizationId, owner.userId, hash, count],
    );
    await client.query('ANALYZE api_keys');
  } finally {
    await client.end();
  }
}

/**
 * `count` ACTIVE keys, key i owned by `owners[i % owners.length]`, written in one statement: their ids. For a test that
 * needs many keys but does not test their creation (no secret: they cannot be exchanged, only revoked and listed).
 */
export async function seedActive(t: TestApp, owners: TestUser[], count: number): Promise<string[]> {
  const ids = Array.from({ length: count }, () => randomUUID());
  const at = new Date().toISOString();
  const values: unknown[] = [];
  const rows = ids.map((id, i) => {
    const owner = owners[i % owners.length];
    values.push(id, owner.organizationId, owner.userId, `seeded ${i}`);
    const n = values.length;
    const p = (k: number): string => (DATABASE_KIND === 'sqlite' ? '?' : `$${k}`);
    return `(${p(n - 3)}, ${p(n - 2)}, ${p(n - 1)}, ${p(n)}, '${'ab'.repeat(32)}', 'ACTIVE', 0, '${at}', '${at}')`;
  });
  await t.get(DataSource).query(
    `INSERT INTO api_keys (id, organization_id, user_id, label, secret_hash, status, scopes, created_at, updated_at)
       VALUES ${rows.join(', ')}`,
    values,
  );
  return ids;
}
