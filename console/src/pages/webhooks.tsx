import { type FormEvent, useEffect, useId, useState } from 'react';
import { api, unwrap } from '../api/client';
import { type CreatedWebhook, type Webhook, WEBHOOK_EVENTS } from '../api/webhooks';
import { CheckboxList, useSelection } from '../components/checkbox-list';
import { ConfirmDialog } from '../components/dialog';
import { Empty, ErrorMessage, LoadStatus, Success } from '../components/feedback';
import { Pager } from '../components/pager';
import { SecretPanel } from '../components/secret-panel';
import { formatTime } from '../format';
import { useLoad, useTitle } from '../hooks';
import type { Session } from '../session';

const PAGE_SIZE = 20;
/** While a delivery is pending, its log is read again this often: the next attempt shows without a click. */
const PENDING_REFRESH_MS = 2000;

/**
 * What the server does with an endpoint's address (docs/webhooks.md#what-an-endpoint-may-be), as the list's
 * `loopback_urls_allowed` says: URLs on Gatehouse's own machine are accepted outside production only.
 */
function webhookUrlHint(loopbackAllowed: boolean | undefined): string {
  const refused = 'Private, link-local and reserved addresses are refused.';
  if (loopbackAllowed === true) {
    return (
      'An https address reachable from Gatehouse. This server does not run in production, so it also accepts ' +
      `addresses on its own machine (localhost, 127.0.0.1, [::1]), over http too. ${refused}`
    );
  }
  if (loopbackAllowed === false) {
    return `An https address reachable from Gatehouse. Addresses on its own machine (localhost) are refused. ${refused}`;
  }
  return `An https address reachable from Gatehouse. ${refused}`;
}

/** The form that adds an endpoint: its URL and the events it receives. */
function CreateWebhookForm({
  loopbackAllowed,
  onCreated,
  onCancel,
}: {
  loopbackAllowed: boolean | undefined;
  onCreated: (webhook: CreatedWebhook) => void;
  onCancel: () => void;
}) {
  const ids = { heading: useId(), url: useId(), hint: useId() };
  const [url, setUrl] = useState('');
  const [events, toggleEvent] = useSelection(WEBHOOK_EVENTS, []);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>();
  const [formError, setFormError] = useState<string>();

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    if (events.length === 0) {
      setFormError('Choose at least one event.');
      return;
    }
    setFormError(undefined);
    setBusy(true);
    setError(undefined);
    try {
      const { webhook } = await unwrap(api.POST('/v1/organization/webhooks', { body: { url: url.trim(), events } }));
      onCreated(webhook);
    } catch (failure) {
      setError(failure);
      setBusy(false);
    }
  };

  return (
    <form className="panel" onSubmit={(event) => void submit(event)} aria-labelledby={ids.heading}>
      <h2 id={ids.heading}>New webhook</h2>
      <div className="field">
        <label htmlFor={ids.url}>Endpoint URL</label>
        <input
          id={ids.url}
          type="url"
          required
          value={url}
          maxLength={2048}
          autoComplete="off"
          spellCheck={false}
          placeholder="https://hooks.example.com/gatehouse"
          aria-describedby={ids.hint}
          onChange={(event) => setUrl(event.target.value)}
        />
        <p className="hint" id={ids.hint}>
          {webhookUrlHint(loopbackAllowed)}
        </p>
      </div>
      <fieldset className="field">
        <legend>Events this endpoint receives</legend>
        <CheckboxList name="events" options={WEBHOOK_EVENTS} selected={events} onToggle={toggleEvent} />
      </fieldset>
      {formError !== undefined && (
        <p className="message message-error" role="alert">
          {formError}
        </p>
      )}
      <ErrorMessage error={error} />
      <div className="actions">
        <button type="submit" className="button button-primary" disabled={busy}>
          {busy ? 'Creating…' : 'Create webhook'}
        </button>
        <button type="button" className="button" onClick={onCancel} disabled={busy}>
          Cancel
        </button>
      </div>
    </form>
  );
}

/** One endpoint's delivery log, newest first; read again while a delivery is pending. */
function DeliveryLog({ webhook, generation }: { webhook: Webhook; generation: number }) {
  const headingId = useId();
  const [page, setPage] = useState(1);
  const deliveries = useLoad(
    () =>
      unwrap(
        api.GET('/v1/organization/webhooks/{id}/deliveries', {
          params: { path: { id: webhook.id }, query: { page, limit: PAGE_SIZE } },
        }),
      ),
    `${webhook.id}/${page}/${generation}`,
  );
  const pending = deliveries.data?.deliveries.some((delivery) => delivery.status === 'pending') ?? false;
  const { reload, loading } = deliveries;

  useEffect(() => {
    if (!pending || loading) return;
    const timer = setTimeout(reload, PENDING_REFRESH_MS);
    return () => clearTimeout(timer);
  }, [pending, loading, reload]);

  return (
    <section aria-labelledby={headingId}>
      <div className="page-heading">
        <h2 id={headingId}>Deliveries to {webhook.url}</h2>
        <button type="button" className="button button-small" onClick={reload}>
          Refresh deliveries
        </button>
      </div>
      <LoadStatus loaded={deliveries} what="the deliveries" />
      {deliveries.data !== undefined &&
        (deliveries.data.deliveries.length === 0 ? (
          <Empty>Nothing has been sent to this endpoint yet.</Empty>
        ) : (
          <>
            <div className="table-wrap">
              <table className="responsive">
                <caption className="visually-hidden">Deliveries to {webhook.url}</caption>
                <thead>
                  <tr>
                    <th scope="col">Event</th>
                    <th scope="col">Status</th>
                    <th scope="col">Attempts</th>
                    <th scope="col">Last response</th>
                    <th scope="col">Next attempt</th>
                    <th scope="col">Created</th>
                  </tr>
                </thead>
                <tbody>
                  {deliveries.data.deliveries.map((delivery) => (
                    <tr key={delivery.id} data-testid="delivery">
                      <th scope="row" data-label="Event">
                        <code>{delivery.event_type}</code>
                      </th>
                      <td data-label="Status">{delivery.status}</td>
                      <td data-label="Attempts">{delivery.attempts}</td>
                      <td data-label="Last response">
                        {delivery.last_response_status !== null
                          ? `HTTP ${delivery.last_response_status}`
                          : (delivery.last_error ?? '—')}
                      </td>
                      <td data-label="Next attempt">
                        {delivery.next_attempt_at === null ? '—' : formatTime(delivery.next_attempt_at)}
                      </td>
                      <td data-label="Created">{formatTime(delivery.created_at)}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
            <Pager
              page={page}
              limit={PAGE_SIZE}
              total={deliveries.data.total_count}
              onPage={setPage}
              label="Deliveries"
            />
          </>
        ))}
    </section>
  );
}

/**
 * The organization's webhook endpoints (webhooks:read; changes: webhooks:write): add one, send a test, read its deliveries, delete it; one
 * disabled after failing again and again (docs/webhooks.md#disabled-endpoints) says so and can be enabled again.
 */
export function WebhooksPage({ session }: { session: Session }) {
  useTitle('Webhooks');
  const [page, setPage] = useState(1);
  const [creating, setCreating] = useState(false);
  const [secret, setSecret] = useState<CreatedWebhook>();
  const [deleting, setDeleting] = useState<Webhook>();
  const [selected, setSelected] = useState<Webhook>();
  const [logGeneration, setLogGeneration] = useState(0);
  const [done, setDone] = useState<string>();
  const [actionError, setActionError] = useState<unknown>();
  const webhooks = useLoad(
    () => unwrap(api.GET('/v1/organization/webhooks', { params: { query: { page, limit: PAGE_SIZE } } })),
    String(page),
  );

  const sendTest = async (webhook: Webhook) => {
    setDone(undefined);
    setActionError(undefined);
    try {
      await unwrap(api.POST('/v1/organization/webhooks/{id}/test', { params: { path: { id: webhook.id } } }));
      setDone(`Test event sent to ${webhook.url}. Its delivery is in the log below.`);
      setSelected(webhook);
      setLogGeneration((n) => n + 1);
    } catch (failure) {
      setActionError(failure);
    }
  };

  const enable = async (webhook: Webhook) => {
    setDone(undefined);
    setActionError(undefined);
    try {
      await unwrap(api.POST('/v1/organization/webhooks/{id}/enable', { params: { path: { id: webhook.id } } }));
      setDone(`Webhook ${webhook.url} enabled. The events that waited are sent now.`);
      webhooks.reload();
      if (selected?.id === webhook.id) setLogGeneration((n) => n + 1);
    } catch (failure) {
      setActionError(failure);
    }
  };

  return (
    <>
      <div className="page-heading">
        <h1>Webhooks</h1>
        {!creating && secret === undefined && (
          <button
            type="button"
            className="button button-primary"
            onClick={() => {
              setDone(undefined);
              setCreating(true);
            }}
          >
            Add webhook
          </button>
        )}
      </div>
      <p className="lead">Endpoints that receive signed events about {session.organization.name}’s keys and members.</p>
      {creating && (
        <CreateWebhookForm
          loopbackAllowed={webhooks.data?.loopback_urls_allowed}
          onCancel={() => setCreating(false)}
          onCreated={(webhook) => {
            setCreating(false);
            setSecret(webhook);
            webhooks.reload();
          }}
        />
      )}
      {secret !== undefined && (
        <SecretPanel
          secret={secret.secret}
          kind="webhook-secret"
          title={`Signing secret of ${secret.url}`}
          note="Your receiver checks each event's signature with this secret (docs/webhooks.md)."
          onDone={() => setSecret(undefined)}
        />
      )}
      {done !== undefined && <Success>{done}</Success>}
      <ErrorMessage error={actionError} />
      <LoadStatus loaded={webhooks} what="the webhooks" />
      {webhooks.data !== undefined &&
        (webhooks.data.webhooks.length === 0 ? (
          <Empty>No webhooks yet.</Empty>
        ) : (
          <>
            <div className="table-wrap">
              <table className="responsive">
                <caption className="visually-hidden">Webhooks</caption>
                <thead>
                  <tr>
                    <th scope="col">URL</th>
                    <th scope="col">Events</th>
                    <th scope="col">Status</th>
                    <th scope="col">Created</th>
                    <th scope="col">
                      <span className="visually-hidden">Actions</span>
                    </th>
                  </tr>
                </thead>
                <tbody>
                  {webhooks.data.webhooks.map((webhook) => (
                    <tr key={webhook.id} data-testid="webhook">
                      <th scope="row" data-label="URL">
                        <code>{webhook.url}</code>
                      </th>
                      <td data-label="Events">
                        {webhook.events.map((event) => (
                          <code key={event} className="detail">
                            {event}{' '}
                          </code>
                        ))}
                      </td>
                      <td data-label="Status">
                        {webhook.status === 'disabled' ? (
                          <span className="badge badge-disabled" title="Too many failed attempts in a row">
                            Disabled
                            {webhook.disabled_at !== null && <> since {formatTime(webhook.disabled_at)}</>}
                          </span>
                        ) : (
                          <span className="badge badge-active">Active</span>
                        )}
                      </td>
                      <td data-label="Created">{formatTime(webhook.created_at)}</td>
                      <td data-label="Actions" className="row-actions">
                        <>
                          <button
                            type="button"
                            className="button button-small"
                            onClick={() => {
                              setSelected(webhook);
                              setLogGeneration((n) => n + 1);
                            }}
                          >
                            Deliveries<span className="visually-hidden"> of {webhook.url}</span>
                          </button>
                          {webhook.status === 'disabled' ? (
                            <button
                              type="button"
                              className="button button-small button-primary"
                              onClick={() => void enable(webhook)}
                            >
                              Enable<span className="visually-hidden"> {webhook.url}</span>
                            </button>
                          ) : (
                            <button
                              type="button"
                              className="button button-small"
                              onClick={() => void sendTest(webhook)}
                            >
                              Send test<span className="visually-hidden"> to {webhook.url}</span>
                            </button>
                          )}
                          <button
                            type="button"
                            className="button button-small button-danger"
                            onClick={() => setDeleting(webhook)}
                          >
                            Delete<span className="visually-hidden"> {webhook.url}</span>
                          </button>
                        </>
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
            <Pager page={page} limit={PAGE_SIZE} total={webhooks.data.total_count} onPage={setPage} label="Webhooks" />
          </>
        ))}
      {selected !== undefined && <DeliveryLog key={selected.id} webhook={selected} generation={logGeneration} />}
      {deleting !== undefined && (
        <ConfirmDialog
          title={`Delete the webhook ${deleting.url}?`}
          confirmLabel="Delete webhook"
          danger
          onClose={() => setDeleting(undefined)}
          onConfirm={async () => {
            await unwrap(api.DELETE('/v1/organization/webhooks/{id}', { params: { path: { id: deleting.id } } }));
            setDone(`Webhook ${deleting.url} deleted.`);
            if (selected?.id === deleting.id) setSelected(undefined);
            webhooks.reload();
          }}
        >
          <p>
            No more events go to <code>{deleting.url}</code>, and its pending deliveries are dropped. This cannot be
            undone.
          </p>
        </ConfirmDialog>
      )}
    </>
  );
}
