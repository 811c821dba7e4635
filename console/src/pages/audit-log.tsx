import { type FormEvent, useId, useState } from 'react';
import { api, toGatehouseError, unwrap } from '../api/client';
import type { AuditAction, AuditEvent } from '../api/contract';
import { Email } from '../components/email';
import { Empty, ErrorMessage, Loading } from '../components/feedback';
import { compactId, formatTime } from '../format';
import { useLoad, useTitle } from '../hooks';
import { navigate, useSearch } from '../router';

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
  'member.invited': true,
  'member.invitation_revoked': true,
  'trusted_issuer.added': true,
  'trusted_issuer.removed': true,
  'trusted_issuer.updated': true,
  'webhook.created': true,
  'webhook.deleted': true,
  'webhook.disabled': true,
  'webhook.enabled': true,
  'webhook.secret_rotated': true,
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

type FilterName = keyof Filters;
const FILTER_NAMES: FilterName[] = ['action', 'actor_user_id', 'actor_email', 'target_id', 'since', 'until'];

/**
 * The filters the page's address carries (`/console/audit?action=api_key.updated&since=…`), the API's own names and
 * values (since and until as ISO instants): a reload, a shared link, back and forward show the same list. What the
 * API would refuse is left out rather than sent.
 */
function filtersOf(search: string): Filters {
  const params = new URLSearchParams(search);
  const filters: Filters = {};
  const action = params.get('action');
  if (action !== null && (ACTIONS as string[]).includes(action)) filters.action = action as AuditAction;
  const actorId = params.get('actor_user_id');
  if (actorId !== null && UUID.test(actorId)) filters.actor_user_id = actorId.toLowerCase();
  const actorEmail = params.get('actor_email');
  if (actorEmail !== null && EMAIL.test(actorEmail)) filters.actor_email = actorEmail;
  const target = params.get('target_id');
  if (target !== null && UUID.test(target)) filters.target_id = target.toLowerCase();
  for (const name of ['since', 'until'] as const) {
    const value = params.get(name);
    if (value !== null && !Number.isNaN(Date.parse(value))) filters[name] = new Date(value).toISOString();
  }
  return filters;
}

function searchOf(filters: Filters): string {
  const params = new URLSearchParams();
  for (const name of FILTER_NAMES) {
    const value = filters[name];
    if (value !== undefined) params.set(name, value);
  }
  const text = params.toString();
  return text === '' ? '' : `?${text}`;
}

/** datetime-local text (local time) as an ISO timestamp, or undefined when empty. */
function iso(local: string): string | undefined {
  return local === '' ? undefined : new Date(local).toISOString();
}

/** An ISO instant as datetime-local text in the browser's zone (the form shows what the address holds). */
function local(instant: string | undefined): string {
  if (instant === undefined) return '';
  const date = new Date(instant);
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())}T${pad(date.getHours())}:${pad(date.getMinutes())}`;
}

function formOf(filters: Filters) {
  return {
    action: filters.action ?? '',
    actor: filters.actor_email ?? filters.actor_user_id ?? '',
    target: filters.target_id ?? '',
    since: local(filters.since),
    until: local(filters.until),
  };
}

function Who({ event }: { event: AuditEvent }) {
  if (event.actor_user_id === null && event.actor_api_key_id === null) return <span className="muted">no one</span>;
  return (
    <>
      {event.actor_email !== null && <Email address={event.actor_email} />}
      {event.actor_user_id !== null && <code className="id detail">{event.actor_user_id}</code>}
      {event.actor_api_key_id !== null && <span className="detail">with key {compactId(event.actor_api_key_id)}</span>}
    </>
  );
}

type ChangeValue = NonNullable<AuditEvent['changes']>[string]['before'];

/** A changed field's value in words: none, text in quotes, a list, a rate limit, an instant. */
function changeValue(value: ChangeValue): string {
  if (value === null) return 'none';
  if (Array.isArray(value)) return value.join(', ');
  if (typeof value === 'object') {
    const { requests, window_seconds } = value as { requests?: unknown; window_seconds?: unknown };
    if (typeof requests === 'number' && typeof window_seconds === 'number') {
      return `${requests} per ${window_seconds} s`;
    }
    return JSON.stringify(value);
  }
  return /^\d{4}-\d{2}-\d{2}T/.test(value) ? formatTime(value) : `“${value}”`;
}

/** What a change changed (api_key.updated, webhook.secret_rotated): each field, before → after. */
function Changes({ changes }: { changes: AuditEvent['changes'] }) {
  if (changes === null || Object.keys(changes).length === 0) return null;
  return (
    <ul className="changes" aria-label="Changes">
      {Object.entries(changes).map(([field, change]) => (
        <li key={field}>
          <code>{field}</code>: {changeValue(change.before)} → {changeValue(change.after)}
        </li>
      ))}
    </ul>
  );
}

/** Saves a download the way a link with `download` does (the export needs the session's Authorization header). */
function save(blob: Blob, name: string): void {
  const url = URL.createObjectURL(blob);
  const link = document.createElement('a');
  link.href = url;
  link.download = name;
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
}

/**
 * The organization's audit log (audit:read), newest first, filtered (the filters kept in the page's address), page after
 * page; the filtered events exported as CSV or JSON.
 */
export function AuditLogPage() {
  useTitle('Audit log');
  const ids = { action: useId(), actor: useId(), target: useId(), since: useId(), until: useId(), exportHint: useId() };
  const search = useSearch();
  const filters = filtersOf(search);
  const filtersKey = JSON.stringify(filters);
  const [form, setForm] = useState(() => formOf(filters));
  const [more, setMore] = useState<AuditEvent[]>([]);
  const [moreError, setMoreError] = useState<unknown>();
  const [nextCursor, setNextCursor] = useState<string | null>(null);
  const [loadingMore, setLoadingMore] = useState(false);
  const [actorError, setActorError] = useState<string>();
  const [exporting, setExporting] = useState<'csv' | 'json'>();
  const [exportError, setExportError] = useState<unknown>();

  // Back, forward or a link changed the address: the form shows its filters (set while rendering, as React advises
  // for state that follows a value).
  const [formFilters, setFormFilters] = useState(filtersKey);
  if (formFilters !== filtersKey) {
    setFormFilters(filtersKey);
    setForm(formOf(filters));
  }

  const first = useLoad(async () => {
    const answer = await unwrap(api.GET('/v1/audit-events', { params: { query: { ...filters, limit: PAGE_SIZE } } }));
    setMore([]);
    setNextCursor(answer.next_cursor);
    return answer.audit_events;
  }, filtersKey);

  const apply = (event: FormEvent) => {
    event.preventDefault();
    const actor = form.actor.trim();
    if (actor !== '' && !UUID.test(actor) && !EMAIL.test(actor)) {
      setActorError('Name the actor by e-mail address (dev@acme.test) or user id (a UUID such as 3f2b…-…).');
      return;
    }
    setActorError(undefined);
    const next = searchOf({
      ...(form.action === '' ? {} : { action: form.action as AuditAction }),
      ...(actor === '' ? {} : UUID.test(actor) ? { actor_user_id: actor.toLowerCase() } : { actor_email: actor }),
      ...(form.target.trim() === '' ? {} : { target_id: form.target.trim() }),
      ...(iso(form.since) === undefined ? {} : { since: iso(form.since) }),
      ...(iso(form.until) === undefined ? {} : { until: iso(form.until) }),
    });
    // A new address for new filters (back returns to the previous ones); the same filters are read again.
    if (next === search) first.reload();
    else navigate(`/audit${next}`);
  };

  const download = async (format: 'csv' | 'json') => {
    setExporting(format);
    setExportError(undefined);
    try {
      const { data, error, response } = await api.GET('/v1/audit-events/export', {
        params: { query: { ...filters, format } },
        parseAs: 'blob',
      });
      if (!response.ok || data === undefined) throw toGatehouseError(response, error);
      const name = /filename="([^"]+)"/.exec(response.headers.get('Content-Disposition') ?? '')?.[1];
      save(data, name ?? `audit-events.${format}`);
    } catch (failure) {
      setExportError(failure);
    } finally {
      setExporting(undefined);
    }
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
      <div className="actions export-actions">
        <button
          type="button"
          className="button"
          onClick={() => void download('csv')}
          disabled={exporting !== undefined}
          aria-describedby={ids.exportHint}
        >
          {exporting === 'csv' ? 'Exporting…' : 'Export CSV'}
        </button>
        <button
          type="button"
          className="button"
          onClick={() => void download('json')}
          disabled={exporting !== undefined}
          aria-describedby={ids.exportHint}
        >
          {exporting === 'json' ? 'Exporting…' : 'Export JSON'}
        </button>
        <span className="hint" id={ids.exportHint}>
          The applied filters, at most 31 days: the last 31 unless Since and Until say otherwise.
        </span>
      </div>
      <ErrorMessage error={exportError} />
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
                    <Changes changes={event.changes} />
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
                        {event.target_email !== null && <Email address={event.target_email} />}
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
