import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { AuditEvent } from '../../src/audit/audit-event.entity';
import { bearer } from './http-assertions';
import type { TestApp, TestUser } from './test-app';

/** An audit event with every field set (null where not given), stored with `seedAuditEvents`. */
export function auditEvent(organizationId: string | null, fields: Partial<AuditEvent> = {}): AuditEvent {
  return {
    id: randomUUID(),
    occurredAt: new Date(),
    action: 'api_key.created',
    organizationId,
    actorUserId: null,
    actorApiKeyId: null,
    targetType: null,
    targetId: null,
    previousApiKeyId: null,
    previousApiKeyExpiresAt: null,
    reason: null,
    clientIp: null,
    requestId: null,
    changes: null,
    ...fields,
  };
}

/** Stores events straight into audit_events, a few hundred rows per statement. */
export async function seedAuditEvents(t: TestApp, events: AuditEvent[]): Promise<void> {
  const repository = t.get(DataSource).getRepository(AuditEvent);
  for (let start = 0; start < events.length; start += 500) {
    // `changes` is JSON (any value), which TypeORM's partial-entity type cannot follow.
    await repository.insert(events.slice(start, start + 500) as Parameters<typeof repository.insert>[0]);
  }
}

export interface AuditEventBody {
  id: string;
  action: string;
  reason: string | null;
  occurred_at: string;
  actor_user_id: string | null;
  actor_api_key_id: string | null;
  target_type: string | null;
  target_id: string | null;
  previous_api_key_id: string | null;
  previous_api_key_expires_at: string | null;
  client_ip: string | null;
  request_id: string | null;
  changes: Record<string, { before: unknown; after: unknown }> | null;
}

export interface AuditPageBody {
  audit_events: AuditEventBody[];
  next_cursor: string | null;
}

/** GET /v1/audit-events as `user` with `query`; asserts 200. */
export async function auditPage(
  t: TestApp,
  user: TestUser,
  query: Record<string, string | number> = {},
): Promise<AuditPageBody> {
  const response = await t.http().get('/v1/audit-events').query(query).set(bearer(user.token));
  if (response.status !== 200) throw new Error(`GET /v1/audit-events: ${response.status} ${response.text}`);
  return response.body as AuditPageBody;
}

/** Every page from the first, following next_cursor; the ids in the order they came and the page count. */
export async function allPages(
  t: TestApp,
  user: TestUser,
  query: Record<string, string | number> = {},
  between?: (pagesRead: number, lastPage: AuditPageBody) => Promise<void>,
): Promise<{ ids: string[]; pages: AuditPageBody[] }> {
  const pages: AuditPageBody[] = [];
  let cursor: string | null = null;
  do {
    const page = await auditPage(t, user, cursor === null ? query : { ...query, cursor });
    pages.push(page);
    cursor = page.next_cursor;
    if (between !== undefined && cursor !== null) await between(pages.length, page);
  } while (cursor !== null);
  return { ids: pages.flatMap((page) => page.audit_events.map((event) => event.id)), pages };
}
