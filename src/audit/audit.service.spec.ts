import type { AuditEvent } from './audit-event.entity';
import { AuditCursorCodec } from './audit-cursor';
import type { AuditRepository } from './audit.repository';
import { AuditService } from './audit.service';
import type { AuditObserver } from './observer';

/** recordSoon: the entries of the token exchange's successes, written together after the answer. */
describe('AuditService.recordSoon', () => {
  let statements: AuditEvent[][];
  let told: AuditEvent[][];
  let audit: AuditService;
  let refused: string | undefined;

  beforeEach(() => {
    jest.useFakeTimers();
    statements = [];
    told = [];
    refused = undefined;
    const repository = {
      // A database that refuses a statement holding the entry whose reason is `refused`, and that entry on its own.
      insertAll: (events: AuditEvent[]) =>
        events.some((event) => event.reason === refused)
          ? Promise.reject(new Error('value too long for type character varying(64)'))
          : Promise.resolve(void statements.push(events)),
      insert: (event: AuditEvent) =>
        event.reason === refused
          ? Promise.reject(new Error('value too long for type character varying(64)'))
          : Promise.resolve(void statements.push([event])),
    } as unknown as AuditRepository;
    const observer: AuditObserver = { recorded: (events) => Promise.resolve(void told.push([...events])) };
    audit = new AuditService(repository, new AuditCursorCodec('a-secret-of-the-test'), observer, {
      recorded: () => Promise.resolve(),
    });
  });

  afterEach(() => jest.useRealTimers());

  const exchanged = (sub: string) =>
    audit.recordSoon({
      action: 'workload_identity.exchanged',
      organizationId: '6f1c1d8e-4f38-4c1b-9a57-2d4a0c1e9b11',
      targetType: 'workload_identity',
      targetId: '0b5e3c1a-7d2f-4e8a-b6c9-1f2e3d4c5b6a',
      reason: sub,
      request: { id: 'req-1', ip: '203.0.113.7' },
    });

  it('writes the entries of 50 ms in one statement, in order, and tells the observers once', async () => {
    exchanged('job-1');
    exchanged('job-2');
    await jest.advanceTimersByTimeAsync(49);
    expect(statements).toEqual([]);
    exchanged('job-3');
    await jest.advanceTimersByTimeAsync(1);
    expect(statements.map((events) => events.map((event) => event.reason))).toEqual([['job-1', 'job-2', 'job-3']]);
    expect(told).toEqual(statements);
    expect(statements[0][0]).toMatchObject({ clientIp: '203.0.113.7', requestId: 'req-1' });

    exchanged('job-4');
    await jest.advanceTimersByTimeAsync(50);
    expect(statements.map((events) => events.map((event) => event.reason))).toEqual([
      ['job-1', 'job-2', 'job-3'],
      ['job-4'],
    ]);
  });

  it('writes what waits at shutdown, without waiting for the timer', async () => {
    exchanged('job-1');
    await audit.onApplicationShutdown();
    expect(statements.map((events) => events.map((event) => event.reason))).toEqual([['job-1']]);
    await jest.advanceTimersByTimeAsync(100);
    expect(statements).toHaveLength(1);
  });

  it('gives each entry a version 7 id of its time, so that the ids sort as the entries were made', async () => {
    exchanged('job-1');
    await jest.advanceTimersByTimeAsync(10);
    exchanged('job-2');
    await jest.advanceTimersByTimeAsync(50);
    const [first, second] = statements[0];
    for (const event of [first, second]) {
      expect(event.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      expect(parseInt(event.id.slice(0, 8) + event.id.slice(9, 13), 16)).toBe(event.occurredAt.getTime());
    }
    expect(first.id < second.id).toBe(true);
  });

  it('keeps the other entries of a statement the database refuses for one of them, and tells the observers of those', async () => {
    refused = 'job-2';
    exchanged('job-1');
    exchanged('job-2');
    exchanged('job-3');
    await jest.advanceTimersByTimeAsync(50);
    expect(statements.map((events) => events.map((event) => event.reason))).toEqual([['job-1'], ['job-3']]);
    expect(told.map((events) => events.map((event) => event.reason))).toEqual([['job-1', 'job-3']]);

    exchanged('job-4');
    await jest.advanceTimersByTimeAsync(50);
    expect(statements.map((events) => events.map((event) => event.reason))).toEqual([['job-1'], ['job-3'], ['job-4']]);
  });
});
