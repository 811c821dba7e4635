import 'reflect-metadata';
import { DataSource } from 'typeorm';
import { ApiKey } from '../src/api-keys/api-key.entity';
import { loadBetterSqlite3 } from '../src/database/sqlite-driver';
import { EntityRows } from '../src/database/entity-rows';

/**
 * Micro-benchmark of a row's mapping to its entity (docs/adr/0051-tables-described-once.md): the hand-written mapper
 * against EntityRows, which reads the entity's metadata, on an api_keys row as each database returns it (PostgreSQL:
 * Date objects and numbers; SQLite: ISO text). Prints nanoseconds a row; `npm run bench:rows`.
 */
const ROWS = 200_000;

const date = (value: unknown): Date => (value instanceof Date ? value : new Date(value as string));
const dateOrNull = (value: unknown): Date | null => (value === null ? null : date(value));
const numberOrNull = (value: unknown): number | null => (value === null ? null : Number(value));

/** The hand-written mapper api_keys had before EntityRows (key-rows.ts: shared fields, then the key's), the baseline. */
function toApiKey(row: Record<string, unknown>): ApiKey {
  const shared = {
    id: row.id as string,
    organizationId: row.organization_id as string,
    userId: row.user_id as string,
    label: row.label as string,
    status: row.status as ApiKey['status'],
    scopes: Number(row.scopes),
    expiresAt: dateOrNull(row.expires_at),
    createdAt: date(row.created_at),
    updatedAt: date(row.updated_at),
    lastUsedAt: dateOrNull(row.last_used_at),
    lastUsedIp: row.last_used_ip as string | null,
    revokedAt: dateOrNull(row.revoked_at),
  };
  return Object.assign(new ApiKey(), shared, {
    secretHash: row.secret_hash as string,
    lastUsedUserAgent: row.last_used_user_agent as string | null,
    replacedBy: row.replaced_by as string | null,
    allowedCidrs: row.allowed_cidrs as string | null,
    rateLimitRequests: numberOrNull(row.rate_limit_requests),
    rateLimitWindowSeconds: numberOrNull(row.rate_limit_window_seconds),
  });
}
const ROUNDS = 7;

function row(i: number, dates: 'pg' | 'sqlite'): Record<string, unknown> {
  const at = (ms: number) => (dates === 'pg' ? new Date(ms) : new Date(ms).toISOString());
  return {
    id: `0b6f2c1e-5c7d-4c1a-9b8e-${String(i).padStart(12, '0')}`,
    organization_id: '6f1c1d8e-4f38-4c1b-9a57-2d4a0c1e9b11',
    user_id: '1d2c3b4a-4f38-4c1b-9a57-2d4a0c1e9b11',
    label: 'deploy key',
    secret_hash: 'a'.repeat(64),
    status: 'ACTIVE',
    scopes: 1023,
    expires_at: i % 2 === 0 ? null : at(1_800_000_000_000),
    created_at: at(1_700_000_000_000 + i),
    updated_at: at(1_700_000_000_000 + i),
    last_used_at: i % 3 === 0 ? null : at(1_750_000_000_000),
    last_used_ip: '203.0.113.7',
    last_used_user_agent: 'curl/8.5.0',
    revoked_at: null,
    replaced_by: null,
    allowed_cidrs: null,
    rate_limit_requests: null,
    rate_limit_window_seconds: null,
  };
}

/** The entity as JSON with its properties in name order: the two mappers assign them in different orders. */
const canonical = (key: ApiKey): string => JSON.stringify(Object.entries(key).sort(([a], [b]) => a.localeCompare(b)));

function measure(name: string, map: (row: Record<string, unknown>) => ApiKey, rows: Record<string, unknown>[]): number {
  let sink = 0;
  const perRow: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const start = process.hrtime.bigint();
    for (const r of rows) sink += map(r).scopes;
    perRow.push(Number(process.hrtime.bigint() - start) / rows.length);
  }
  perRow.sort((a, b) => a - b);
  const median = perRow[Math.floor(ROUNDS / 2)];
  console.log(
    `${name.padEnd(28)} ${median.toFixed(0).padStart(5)} ns/row (median of ${ROUNDS}; ${sink > 0 ? '' : '!'})`,
  );
  return median;
}

async function main(): Promise<void> {
  const dataSource = await new DataSource({
    type: 'better-sqlite3',
    driver: loadBetterSqlite3(),
    database: ':memory:',
    entities: [ApiKey],
  }).initialize();
  const rows = EntityRows.of(dataSource, ApiKey);
  for (const dates of ['pg', 'sqlite'] as const) {
    const input = Array.from({ length: ROWS }, (_, i) => row(i, dates));
    const handWritten = (r: Record<string, unknown>) => toApiKey(r);
    const byMetadata = (r: Record<string, unknown>) => rows.toEntity(r);
    for (const r of input.slice(0, 1000)) {
      const [a, b] = [handWritten(r), byMetadata(r)];
      if (canonical(a) !== canonical(b) || !(b instanceof ApiKey)) throw new Error(`${dates}: the mappers differ`);
    }
    // Both get the same warm-up; then interleaved.
    measure(`${dates} warm-up`, handWritten, input);
    measure(`${dates} warm-up`, byMetadata, input);
    measure(`${dates} hand-written toApiKey`, handWritten, input);
    measure(`${dates} EntityRows.toEntity`, byMetadata, input);
    measure(`${dates} hand-written toApiKey`, handWritten, input);
    measure(`${dates} EntityRows.toEntity`, byMetadata, input);
  }
  await dataSource.destroy();
}

void main();
