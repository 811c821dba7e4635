import { type FormEvent, Fragment, useCallback, useEffect, useId, useState } from 'react';
import { api, unwrap } from '../api/client';
import {
  type CreatedWebhook,
  type Webhook,
  type WebhookDelivery,
  type WebhookDeliveryDetail,
  WEBHOOK_EVENTS,
} from '../api/webhooks';
import { CheckboxList, useSelection } from '../components/checkbox-list';
import { ConfirmDialog } from '../components/dialog';
import { Empty, ErrorMessage, LoadStatus, Success } from '../components/feedback';
import { Pager } from '../components/pager';
import { RecordTable } from '../components/record-table';
import { SecretPanel } from '../components/secret-panel';
import { FormActions } from '../components/form-actions';
import { PageHeading } from '../components/page-heading';
import { formatTime } from '../format';
import { useLoad, useTitle } from '../hooks';
import { can, type Session } from '../session';

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
      <FormActions label="Create webhook" busyLabel="Creating…" busy={busy} onCancel={onCancel} />
    </form>
  );
}

/** The body as sent, indented for reading when it is JSON (the signature covers the bytes, not this layout). */
function readable(body: string): string {
  try {
    return JSON.stringify(JSON.parse(body), null, 2);
  } catch {
    return body;
  }
}

/**
 * What one delivery sent and what came back (docs/webhooks.md#the-delivery-log): the body, the receiver's status,
 * kept headers and the first 4 KiB of its body; and, for those who may change webhooks, "Resend".
 */
function DeliveryDetails({
  webhook,
  delivery,
  id,
  refreshes,
  canResend,
  onResent,
}: {
  webhook: Webhook;
  delivery: WebhookDelivery;
  id: string;
  refreshes: number;
  canResend: boolean;
  onResent: (delivery: WebhookDelivery) => void;
}) {
  const detail = useLoad(
    () =>
      unwrap(
        api.GET('/v1/organization/webhooks/{id}/deliveries/{deliveryId}', {
          params: { path: { id: webhook.id, deliveryId: delivery.id } },
        }),
      ).then((answer) => answer.delivery),
    `${delivery.id}/${refreshes}`,
  );
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>();
  const shown: WebhookDeliveryDetail | undefined = detail.data;

  const resend = async () => {
    setBusy(true);
    setError(undefined);
    try {
      const answer = await unwrap(
        api.POST('/v1/organization/webhooks/{id}/deliveries/{deliveryId}/resend', {
          params: { path: { id: webhook.id, deliveryId: delivery.id } },
        }),
      );
      onResent(answer.delivery);
    } catch (failure) {
      setError(failure);
    } finally {
      setBusy(false);
    }
  };

  return (
    <div className="delivery-detail" id={id} data-testid="delivery-detail">
      <LoadStatus loaded={detail} what="the delivery" />
      {shown !== undefined && (
        <div className="detail-columns">
          <section aria-label="Request sent">
            <h3>Request</h3>
            <dl className="facts">
              <dt>webhook-id</dt>
              <dd>
                <code className="id">{shown.event_id}</code>
              </dd>
              {shown.resent_from !== null && (
                <>
                  <dt>Resends</dt>
                  <dd>
                    <code className="id">{shown.resent_from}</code>
                  </dd>
                </>
              )}
              <dt>Attempts</dt>
              <dd>
                {shown.attempts}
                {shown.last_attempt_at !== null && <>, the last {formatTime(shown.last_attempt_at)}</>}
              </dd>
            </dl>
            <h4>Body</h4>
            {/* Focusable: a long body scrolls, by keyboard too. */}
            <pre className="payload" data-testid="delivery-payload" tabIndex={0} role="region" aria-label="Body sent">
              {readable(shown.payload)}
            </pre>
          </section>
          <section aria-label="Response received">
            <h3>Response</h3>
            {shown.last_response === null ? (
              <p className="muted" data-testid="delivery-response">
                {shown.attempts === 0
                  ? 'Not attempted yet.'
                  : `No answer: ${shown.last_error ?? 'none came'}${
                      shown.last_duration_ms === null ? '' : ` (after ${shown.last_duration_ms} ms)`
                    }.`}
              </p>
            ) : (
              <>
                <dl className="facts" data-testid="delivery-response">
                  <dt>Status</dt>
                  <dd>HTTP {shown.last_response.status}</dd>
                  {shown.last_duration_ms !== null && (
                    <>
                      <dt>Took</dt>
                      <dd>{shown.last_duration_ms} ms</dd>
                    </>
                  )}
                  {Object.entries(shown.last_response.headers).map(([name, value]) => (
                    <Fragment key={name}>
                      <dt>
                        <code>{name}</code>
                      </dt>
                      <dd>
                        <code className="id">{value}</code>
                      </dd>
                    </Fragment>
                  ))}
                </dl>
                <h4>Body</h4>
                {shown.last_response.body === '' ? (
                  <p className="muted">Empty.</p>
                ) : (
                  <pre
                    className="payload"
                    data-testid="delivery-response-body"
                    tabIndex={0}
                    role="region"
                    aria-label="Body received"
                  >
                    {shown.last_response.body}
                  </pre>
                )}
                {shown.last_response.body_truncated && (
                  <p className="hint">Only the first 4 KiB of the answer are kept.</p>
                )}
              </>
            )}
          </section>
        </div>
      )}
      <ErrorMessage error={error} />
      {canResend && (
        <div className="actions">
          <button
            type="button"
            className="button button-small"
            onClick={() => void resend()}
            disabled={busy || webhook.status === 'disabled'}
          >
            {busy ? 'Sending…' : 'Resend'}
            <span className="visually-hidden"> {delivery.event_type} event</span>
          </button>
          <span className="hint">
            {webhook.status === 'disabled'
              ? 'Enable the webhook to resend.'
              : 'A new delivery of the same event, with the same webhook-id, signed now.'}
          </span>
        </div>
      )}
    </div>
  );
}

/** One endpoint's delivery log, newest first; read again while a delivery is pending, or on "Refresh". */
function DeliveryLog({ webhook, generation, canResend }: { webhook: Webhook; generation: number; canResend: boolean }) {
  const headingId = useId();
  const detailPrefix = useId();
  const [page, setPage] = useState(1);
  const [open, setOpen] = useState<ReadonlySet<string>>(new Set());
  const [refreshes, setRefreshes] = useState(0);
  const [resent, setResent] = useState<string>();
  const deliveries = useLoad(
    () =>
      unwrap(
        api.GET('/v1/organization/webhooks/{id}/deliveries', {
          params: { path: { id: webhook.id }, query: { page, limit: PAGE_SIZE } },
        }),
      ),
    `${webhook.id}/${page}/${generation}/${refreshes}`,
  );
  const pending = deliveries.data?.deliveries.some((delivery) => delivery.status === 'pending') ?? false;
  const { loading } = deliveries;
  // The log and every open delivery read again.
  const refresh = useCallback(() => setRefreshes((n) => n + 1), []);

  useEffect(() => {
    if (!pending || loading) return;
    const timer = setTimeout(refresh, PENDING_REFRESH_MS);
    return () => clearTimeout(timer);
  }, [pending, loading, refresh]);

  const toggle = (id: string) =>
    setOpen((current) => {
      const next = new Set(current);
      if (!next.delete(id)) next.add(id);
      return next;
    });

  return (
    <section aria-labelledby={headingId}>
      <div className="page-heading">
        <h2 id={headingId}>Deliveries to {webhook.url}</h2>
        <button type="button" className="button button-small" onClick={refresh} disabled={loading}>
          {loading && deliveries.data !== undefined ? 'Refreshing…' : 'Refresh deliveries'}
        </button>
      </div>
      {resent !== undefined && <Success>{resent}</Success>}
      <LoadStatus loaded={deliveries} what="the deliveries" />
      {deliveries.data !== undefined &&
        (deliveries.data.deliveries.length === 0 ? (
          <Empty>Nothing has been sent to this endpoint yet.</Empty>
        ) : (
          <>
            <div className="table-wrap">
              <table className="responsive deliveries">
                <caption className="visually-hidden">Deliveries to {webhook.url}</caption>
                <thead>
                  <tr>
                    <th scope="col">Event</th>
                    <th scope="col">Status</th>
                    <th scope="col">Attempts</th>
                    <th scope="col">Last response</th>
                    <th scope="col">Next attempt</th>
                    <th scope="col">Created</th>
                    <th scope="col">
                      <span className="visually-hidden">Details</span>
                    </th>
                  </tr>
                </thead>
                <tbody>
                  {deliveries.data.deliveries.map((delivery) => {
                    const expanded = open.has(delivery.id);
                    const detailId = `${detailPrefix}-${delivery.id}`;
                    return (
                      <Fragment key={delivery.id}>
                        <tr data-testid="delivery" className={expanded ? 'expanded' : undefined}>
                          <th scope="row" data-label="Event">
                            <code>{delivery.event_type}</code>
                            {delivery.resent_from !== null && <span className="detail">resent</span>}
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
                          <td className="row-actions">
                            <button
                              type="button"
                              className="button button-small"
                              aria-expanded={expanded}
                              aria-controls={expanded ? detailId : undefined}
                              onClick={() => toggle(delivery.id)}
                            >
                              {expanded ? 'Hide details' : 'Details'}
                              <span className="visually-hidden">
                                {' '}
                                of the {delivery.event_type} delivery of {formatTime(delivery.created_at)}
                              </span>
                            </button>
                          </td>
                        </tr>
                        {expanded && (
                          <tr className="detail-row">
                            <td colSpan={7}>
                              <DeliveryDetails
                                webhook={webhook}
                                delivery={delivery}
                                id={detailId}
                                refreshes={refreshes}
                                canResend={canResend}
                                onResent={(made) => {
                                  setResent(
                                    `The ${made.event_type} event is sent again: a new delivery, at the top of the log.`,
                                  );
                                  setPage(1);
                                  refresh();
                                }}
                              />
                            </td>
                          </tr>
                        )}
                      </Fragment>
                    );
                  })}
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

/** The overlaps a rotation offers: how long the old secret keeps signing beside the new one. */
const OVERLAPS = [
  { seconds: 0, label: 'None: the old secret stops signing now' },
  { seconds: 3600, label: '1 hour' },
  { seconds: 86400, label: '24 hours' },
  { seconds: 604800, label: '7 days' },
];

/**
 * A new signing secret for an endpoint (docs/webhooks.md#rotating-the-secret): during the overlap every event carries
 * a signature by each secret, so the receiver accepts with either while it moves to the new one.
 */
function RotateSecretDialog({
  webhook,
  onRotated,
  onClose,
}: {
  webhook: Webhook;
  onRotated: (rotated: CreatedWebhook) => void;
  onClose: () => void;
}) {
  const overlapId = useId();
  const [overlap, setOverlap] = useState(86400);
  return (
    <ConfirmDialog
      title={`Rotate the signing secret of ${webhook.url}?`}
      confirmLabel="Rotate secret"
      onClose={onClose}
      onConfirm={async () => {
        const { webhook: rotated } = await unwrap(
          api.POST('/v1/organization/webhooks/{id}/rotate-secret', {
            params: { path: { id: webhook.id } },
            body: { overlap_seconds: overlap },
          }),
        );
        onRotated(rotated);
      }}
    >
      <p>
        A new secret replaces the current one; it is shown once. During the overlap every event is signed with both, so
        your receiver accepts it with either secret while you put the new one in place.
      </p>
      {webhook.previous_secret_expires_at !== null && (
        <p className="warning">
          The secret an earlier rotation replaced stops signing now, before{' '}
          {formatTime(webhook.previous_secret_expires_at)}.
        </p>
      )}
      <div className="field">
        <label htmlFor={overlapId}>Overlap: the old secret keeps signing for</label>
        <select id={overlapId} value={overlap} onChange={(event) => setOverlap(Number(event.target.value))}>
          {OVERLAPS.map((choice) => (
            <option key={choice.seconds} value={choice.seconds}>
              {choice.label}
            </option>
          ))}
        </select>
      </div>
    </ConfirmDialog>
  );
}

/** Active or disabled (since when), and the overlap of a rotated secret. */
function WebhookStatus({ webhook }: { webhook: Webhook }) {
  return (
    <>
      {webhook.status === 'disabled' ? (
        <span className="badge badge-disabled" title="Too many failed attempts in a row">
          Disabled
          {webhook.disabled_at !== null && <> since {formatTime(webhook.disabled_at)}</>}
        </span>
      ) : (
        <span className="badge badge-active">Active</span>
      )}
      {webhook.previous_secret_expires_at !== null && (
        <span className="detail" data-testid="secret-overlap">
          Old secret signs too until {formatTime(webhook.previous_secret_expires_at)}
        </span>
      )}
    </>
  );
}

/**
 * The organization's webhook endpoints (webhooks:read; changes: webhooks:write): add one, send a test, read its
 * deliveries (each with the body sent and the answer; resend one), rotate its secret, delete it; one disabled after
 * failing again and again (docs/webhooks.md#disabled-endpoints) says so and can be enabled again.
 */
export function WebhooksPage({ session }: { session: Session }) {
  useTitle('Webhooks');
  const [page, setPage] = useState(1);
  const [creating, setCreating] = useState(false);
  const [secret, setSecret] = useState<{ webhook: CreatedWebhook; rotated: boolean }>();
  const [rotating, setRotating] = useState<Webhook>();
  const canWrite = can(session, 'webhooks:write');
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
      <PageHeading
        title="Webhooks"
        action={
          canWrite && !creating && secret === undefined
            ? {
                label: 'Add webhook',
                onClick: () => {
                  setDone(undefined);
                  setCreating(true);
                },
              }
            : undefined
        }
      />
      <p className="lead">Endpoints that receive signed events about {session.organization.name}’s keys and members.</p>
      {creating && (
        <CreateWebhookForm
          loopbackAllowed={webhooks.data?.loopback_urls_allowed}
          onCancel={() => setCreating(false)}
          onCreated={(webhook) => {
            setCreating(false);
            setSecret({ webhook, rotated: false });
            webhooks.reload();
          }}
        />
      )}
      {secret !== undefined && (
        <SecretPanel
          secret={secret.webhook.secret}
          kind="webhook-secret"
          title={`${secret.rotated ? 'New signing secret' : 'Signing secret'} of ${secret.webhook.url}`}
          note={
            secret.rotated && secret.webhook.previous_secret_expires_at !== null
              ? `Until ${formatTime(secret.webhook.previous_secret_expires_at)} every event is signed with the old and the new secret: put this one in your receiver before then.`
              : secret.rotated
                ? 'The old secret signs nothing any more: your receiver needs this one now.'
                : "Your receiver checks each event's signature with this secret (docs/webhooks.md)."
          }
          onDone={() => setSecret(undefined)}
        />
      )}
      {done !== undefined && <Success>{done}</Success>}
      <ErrorMessage error={actionError} />
      <LoadStatus loaded={webhooks} what="the webhooks" />
      {webhooks.data !== undefined && (
        <>
          <RecordTable
            caption="Webhooks"
            rows={webhooks.data.webhooks}
            rowKey={(webhook) => webhook.id}
            testId="webhook"
            empty="No webhooks yet."
            columns={[
              { header: 'URL', cell: (webhook) => <code>{webhook.url}</code> },
              {
                header: 'Events',
                className: 'event-names',
                cell: (webhook) =>
                  webhook.events.map((event) => (
                    <code key={event} className="detail">
                      {event}{' '}
                    </code>
                  )),
              },
              { header: 'Status', cell: (webhook) => <WebhookStatus webhook={webhook} /> },
              { header: 'Created', cell: (webhook) => formatTime(webhook.created_at) },
            ]}
            actions={[
              {
                label: 'Deliveries',
                about: (webhook) => `of ${webhook.url}`,
                onClick: (webhook) => {
                  setSelected(webhook);
                  setLogGeneration((n) => n + 1);
                },
              },
              {
                label: 'Enable',
                about: (webhook) => webhook.url,
                style: 'primary',
                when: (webhook) => canWrite && webhook.status === 'disabled',
                onClick: (webhook) => void enable(webhook),
              },
              {
                label: 'Send test',
                about: (webhook) => `to ${webhook.url}`,
                when: (webhook) => canWrite && webhook.status !== 'disabled',
                onClick: (webhook) => void sendTest(webhook),
              },
              {
                label: 'Rotate secret',
                about: (webhook) => `of ${webhook.url}`,
                when: () => canWrite,
                onClick: (webhook) => {
                  setDone(undefined);
                  setRotating(webhook);
                },
              },
              {
                label: 'Delete',
                about: (webhook) => webhook.url,
                style: 'danger',
                when: () => canWrite,
                confirm: {
                  title: (webhook) => `Delete the webhook ${webhook.url}?`,
                  body: (webhook) => (
                    <p>
                      No more events go to <code>{webhook.url}</code>, and its pending deliveries are dropped. This
                      cannot be undone.
                    </p>
                  ),
                  confirmLabel: 'Delete webhook',
                  danger: true,
                  run: async (webhook) => {
                    await unwrap(
                      api.DELETE('/v1/organization/webhooks/{id}', { params: { path: { id: webhook.id } } }),
                    );
                    setDone(`Webhook ${webhook.url} deleted.`);
                    if (selected?.id === webhook.id) setSelected(undefined);
                    webhooks.reload();
                  },
                },
              },
            ]}
          />
          <Pager page={page} limit={PAGE_SIZE} total={webhooks.data.total_count} onPage={setPage} label="Webhooks" />
        </>
      )}
      {selected !== undefined && (
        <DeliveryLog
          key={selected.id}
          webhook={webhooks.data?.webhooks.find((webhook) => webhook.id === selected.id) ?? selected}
          generation={logGeneration}
          canResend={canWrite}
        />
      )}
      {rotating !== undefined && (
        <RotateSecretDialog
          webhook={rotating}
          onClose={() => setRotating(undefined)}
          onRotated={(rotated) => {
            setSecret({ webhook: rotated, rotated: true });
            webhooks.reload();
          }}
        />
      )}
    </>
  );
}
