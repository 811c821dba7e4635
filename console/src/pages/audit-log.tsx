import { type FormEvent, useId, useState } from 'react';
import { api, unwrap } from '../api/client';
import type { AuditAction, AuditEvent } from '../api/contract';
import { Empty, ErrorMessage, Loading } from '../components/feedback';
import { compactId, formatTime } from '../format';
import { useLoad, useTitle } from '../hooks';

/**
 * Every action the server records, in its order (docs/api.md#audit-events). Written as the keys of a record of every
 * AuditAction, so the compiler refuses a list that misses one the API has.
 */
const ACTIONS = Object.keys({
  'api_key.created': true,
  'api_key.revoked': true,
  'api_key.rotated': true,
  'api_key.updated': true,
  'token.exchange_failed': true,
  'integration.created': true,
  'integration.updated': true,
  'integration.deleted': true,
  'organization.updated': true,
  'console.signed_in': true,
  'console.sign_in_refused': true,
  'console.signed_out': true,
  'member.added': true,
  'member.role_changed': true,
  'member.removed': true,
  'trusted_issuer.added': true,
  'trusted_issuer.removed': true,
  'trusted_issuer.updated': true,
  'webhook.created': true,
  'webhook.deleted': true,
  'webhook.disabled': true,
  'webhook.enabled': true,
  'workload_identity.created': true,
  'workload_identity.revoked': true,
  'workload_identity.exchanged': true,
  'grant.granted': true,
  'grant.refreshed': true,
  'grant.revoked': true,
  'oauth_client.created': true,
  'oauth_client.removed': true,
} satisfies Record<AuditAction, true>) as AuditAction[];
const PAGE_SIZE = 50;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const EMAIL = /^[^\s@]+@[^\s@]+$/;

interface Filters {
  action?: AuditAction;
  /** The actor by user id, or by e-mail address, as the organization keys page names a member. */
  actor_user_id?: string;
  actor_email?: string;
  target_id?: string;
  since?: string;
  until?: string;
}

/** datetime-local text (local time) as an ISO timestamp, or undefined when empty. */
function iso(local: string): string | undefined {
  return local === '' ? undefined : new Date(local).toISOString();
}

function Who({ event }: { event: AuditEvent }) {
  if (event.actor_user_id === null && event.actor_api_key_id === null) return <span className="muted">no one</span>;
  return (
    <>
      {event.actor_email !== null && <span className="person">{event.actor_email}</span>}
      {event.actor_user_id !== null && <code className="id detail">{event.actor_user_id}</code>}
      {event.actor_api_key_id !== null && <span className="detail">with key {compactId(event.actor_api_key_id)}</span>}
    </>
  );
}

/** The organization's audit log (audit:read), newest first, filtered, page after page. */
export function AuditLogPage() {
  useTitle('Audit log');
  const ids = { action: useId(), actor: useId(), target: useId(), since: useId(), until: useId() };
  const [form, setForm] = useState({ action: '', actor: '', target: '', since: '', until: '' });
  const [filters, setFilters] = useState<Filters>({});
  const [more, setMore] = useState<AuditEvent[]>([]);
  const [moreError, setMoreError] = useState<unknown>();
  const [nextCursor, setNextCursor] = useState<string | null>(null);
  const [loadingMore, setLoadingMore] = useState(false);
  const [actorError, setActorError] = useState<string>();

  const first = useLoad(async () => {
    const answer = await unwrap(api.GET('/v1/audit-events', { params: { query: { ...filters, limit: PAGE_SIZE } } }));
    setMore([]);
    setNextCursor(answer.next_cursor);
    return answer.audit_events;
  }, JSON.stringify(filters));

  const apply = (event: FormEvent) => {
    event.preventDefault();
    const actor = form.actor.trim();
    if (actor !== '' && !UUID.test(actor) && !EMAIL.test(actor)) {
      setActorError('Name the actor by e-mail address (dev@acme.test) or user id (a UUID such as 3f2b…-…).');
      return;
    }
    setActorError(undefined);
    setFilters({
      ...(form.action === '' ? {} : { action: form.action as AuditAction }),
      ...(actor === '' ? {} : UUID.test(actor) ? { actor_user_id: actor.toLowerCase() } : { actor_email: actor }),
      ...(form.target.trim() === '' ? {} : { target_id: form.target.trim() }),
      ...(iso(form.since) === undefined ? {} : { since: iso(form.since) }),
      ...(iso(form.until) === undefined ? {} : { until: iso(form.until) }),
    });
  };

  const loadMore = async () => {
    if (nextCursor === null) return;
    setLoadingMore(true);
    setMoreError(undefined);
    try {
      const answer = await unwrap(
        api.GET('/v1/audit-events', { params: { query: { ...filters, limit: PAGE_SIZE, cursor: nextCursor } } }),
      );
      setMore((list) => [...list, ...answer.audit_events]);
      setNextCursor(answer.next_cursor);
    } catch (error) {
      setMoreError(error);
    } finally {
      setLoadingMore(false);
    }
  };

  // A failed request shows its error, never the rows of the filters before it.
  const events = first.error === undefined ? [...(first.data ?? []), ...more] : [];
  const set = (name: keyof typeof form) => (event: { target: { value: string } }) =>
    setForm((current) => ({ ...current, [name]: event.target.value }));

  return (
    <>
      <h1>Audit log</h1>
      <p className="lead">What was done in the organization, newest first. Secrets never appear here.</p>
      <form className="filters" onSubmit={apply} role="search" aria-label="Filter the audit log">
        <div className="field">
          <label htmlFor={ids.action}>Action</label>
          <select id={ids.action} value={form.action} onChange={set('action')}>
            <option value="">Any action</option>
            {ACTIONS.map((action) => (
              <option key={action} value={action}>
                {action}
              </option>
            ))}
          </select>
        </div>
        <div className="field">
          <label htmlFor={ids.actor}>Actor (e-mail or user id)</label>
          <input
            id={ids.actor}
            value={form.actor}
            onChange={set('actor')}
            autoComplete="off"
            spellCheck={false}
            aria-invalid={actorError !== undefined}
            aria-describedby={actorError === undefined ? undefined : `${ids.actor}-error`}
          />
        </div>
        <div className="field">
          <label htmlFor={ids.target}>Target id</label>
          <input id={ids.target} value={form.target} onChange={set('target')} autoComplete="off" spellCheck={false} />
        </div>
        <div className="field">
          <label htmlFor={ids.since}>Since</label>
          <input id={ids.since} type="datetime-local" value={form.since} onChange={set('since')} />
        </div>
        <div className="field">
          <label htmlFor={ids.until}>Until</label>
          <input id={ids.until} type="datetime-local" value={form.until} onChange={set('until')} />
        </div>
        <div className="actions">
          <button type="submit" className="button button-primary">
            Apply filters
          </button>
        </div>
      </form>
      {actorError !== undefined && (
        <p className="message message-error" id={`${ids.actor}-error`} role="alert">
          {actorError}
        </p>
      )}
      <ErrorMessage error={first.error} />
      {first.loading && <Loading what="the audit log" />}
      {!first.loading && first.error === undefined && first.data !== undefined && events.length === 0 && (
        <Empty>No events match.</Empty>
      )}
      {events.length > 0 && (
        <div className="table-wrap">
          <table className="responsive">
            <caption className="visually-hidden">Audit events, newest first</caption>
            <thead>
              <tr>
                <th scope="col">When</th>
                <th scope="col">Action</th>
                <th scope="col">Reason</th>
                <th scope="col">Actor</th>
                <th scope="col">Target</th>
                <th scope="col">Address</th>
                <th scope="col">Request id</th>
              </tr>
            </thead>
            <tbody>
              {events.map((event) => (
                <tr key={event.id} data-action={event.action}>
                  <td data-label="When">
                    <time dateTime={event.occurred_at}>{formatTime(event.occurred_at)}</time>
                  </td>
                  <th scope="row" data-label="Action">
                    <code>{event.action}</code>
                  </th>
                  <td data-label="Reason">{event.reason ?? <span className="muted">—</span>}</td>
                  <td data-label="Actor">
                    <Who event={event} />
                  </td>
                  <td data-label="Target">
                    {event.target_id === null ? (
                      <span className="muted">—</span>
                    ) : (
                      <>
                        <span className="detail">{event.target_type}</span>{' '}
                        {event.target_email !== null && <span className="person">{event.target_email}</span>}
                        {event.target_label !== null && (
                          <span className="person">
                            {event.target_label === '' ? '(no label)' : `“${event.target_label}”`}
                          </span>
                        )}
                        <code className="id">
                          {event.target_type === 'api_key' ? compactId(event.target_id) : event.target_id}
                        </code>
                        {event.previous_api_key_id !== null && (
                          <span className="detail">replaces {compactId(event.previous_api_key_id)}</span>
                        )}
                      </>
                    )}
                  </td>
                  <td data-label="Address">{event.client_ip ?? <span className="muted">—</span>}</td>
                  <td data-label="Request id">
                    {event.request_id === null ? (
                      <span className="muted">—</span>
                    ) : (
                      <code className="id">{event.request_id}</code>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <ErrorMessage error={moreError} />
      {nextCursor !== null && !first.loading && first.error === undefined && (
        <div className="actions">
          <button type="button" className="button" onClick={() => void loadMore()} disabled={loadingMore}>
            {loadingMore ? 'Loading…' : 'Show older events'}
          </button>
        </div>
      )}
    </>
  );
}
