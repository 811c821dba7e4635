import { type FormEvent, useId, useState } from 'react';
import type { components } from '../../../client';
import { api, unwrap } from '../api/client';
import { ErrorMessage, LoadStatus, Success } from '../components/feedback';
import { RecordTable } from '../components/record-table';
import { SecretPanel } from '../components/secret-panel';
import { FormActions } from '../components/form-actions';
import { PageHeading } from '../components/page-heading';
import { formatTime } from '../format';
import { useLoad, useTitle } from '../hooks';
import type { Session } from '../session';

type OAuthClient = components['schemas']['OAuthClientView'];

/** The form that registers an internal app: its name, its redirect URIs (one a line), and whether it gets a secret. */
function RegisterAppForm({
  onCreated,
  onCancel,
}: {
  onCreated: (client: OAuthClient, secret: string | null) => void;
  onCancel: () => void;
}) {
  const ids = { heading: useId(), name: useId(), uris: useId(), hint: useId(), confidential: useId() };
  const [name, setName] = useState('');
  const [uris, setUris] = useState('');
  const [confidential, setConfidential] = useState(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>();

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setBusy(true);
    setError(undefined);
    const redirectUris = uris
      .split('\n')
      .map((uri) => uri.trim())
      .filter((uri) => uri !== '');
    try {
      const answer = await unwrap(
        api.POST('/v1/organization/oauth-clients', {
          body: { name: name.trim(), redirect_uris: redirectUris, confidential },
        }),
      );
      onCreated(answer.oauth_client, answer.client_secret);
    } catch (failure) {
      setError(failure);
      setBusy(false);
    }
  };

  return (
    <form className="panel" onSubmit={(event) => void submit(event)} aria-labelledby={ids.heading}>
      <h2 id={ids.heading}>Register an app</h2>
      <div className="field">
        <label htmlFor={ids.name}>Name</label>
        <input
          id={ids.name}
          required
          maxLength={255}
          value={name}
          autoComplete="off"
          onChange={(event) => setName(event.target.value)}
        />
      </div>
      <div className="field">
        <label htmlFor={ids.uris}>Redirect URIs</label>
        <textarea
          id={ids.uris}
          required
          rows={3}
          value={uris}
          spellCheck={false}
          aria-describedby={ids.hint}
          placeholder="https://assistant.example.com/oauth/callback"
          onChange={(event) => setUris(event.target.value)}
        />
        <p className="hint" id={ids.hint}>
          One a line, at most 10: https, or http on 127.0.0.1, [::1] or localhost (any port). No fragment.
        </p>
      </div>
      <div className="field">
        <label className="inline" htmlFor={ids.confidential}>
          <input
            id={ids.confidential}
            type="checkbox"
            checked={confidential}
            onChange={(event) => setConfidential(event.target.checked)}
          />
          Confidential: a client secret the app sends to the token endpoint
        </label>
      </div>
      <ErrorMessage error={error} />
      <FormActions label="Register app" busyLabel="Registering…" busy={busy} onCancel={onCancel} />
    </form>
  );
}

/**
 * The OAuth clients the organization's admins registered for internal apps (organization:write, docs/mcp.md#clients):
 * its members connect them at resource servers (MCP servers) with the authorization code grant.
 */
export function OAuthAppsPage({ session }: { session: Session }) {
  useTitle('OAuth apps');
  const [creating, setCreating] = useState(false);
  const [created, setCreated] = useState<{ client: OAuthClient; secret: string }>();
  const [done, setDone] = useState<string>();
  const list = useLoad(() => unwrap(api.GET('/v1/organization/oauth-clients')), 'oauth-clients');

  return (
    <>
      <PageHeading
        title="OAuth apps"
        action={
          !creating && created === undefined
            ? {
                label: 'Register app',
                onClick: () => {
                  setDone(undefined);
                  setCreating(true);
                },
              }
            : undefined
        }
      />
      <p className="lead">
        Internal apps that {session.organization.name}’s members may connect to resource servers. Other organizations
        cannot see or use them.
      </p>
      {creating && (
        <RegisterAppForm
          onCancel={() => setCreating(false)}
          onCreated={(client, secret) => {
            setCreating(false);
            if (secret === null) setDone(`${client.name} registered: its client_id is ${client.client_id}.`);
            else setCreated({ client, secret });
            list.reload();
          }}
        />
      )}
      {created !== undefined && (
        <SecretPanel
          secret={created.secret}
          kind="client-secret"
          title={`Client secret of ${created.client.name}`}
          note={`Its client_id is ${created.client.client_id}; the app sends both to the token endpoint.`}
          onDone={() => setCreated(undefined)}
        />
      )}
      {done !== undefined && <Success>{done}</Success>}
      <LoadStatus loaded={list} what="the OAuth apps" />
      {list.data !== undefined && (
        <RecordTable
          caption="OAuth apps"
          rows={list.data.oauth_clients}
          rowKey={(client) => client.client_id}
          testId="oauth-app"
          empty="No OAuth apps yet."
          columns={[
            {
              header: 'App',
              cell: (client) => (
                <>
                  {client.name} <code className="id detail">{client.client_id}</code>
                </>
              ),
            },
            {
              header: 'Redirect URIs',
              cell: (client) =>
                client.redirect_uris.map((uri) => (
                  <code key={uri} className="detail">
                    {uri}
                  </code>
                )),
            },
            { header: 'Kind', cell: (client) => (client.confidential ? 'confidential' : 'public') },
            {
              header: 'Last used',
              cell: (client) => (client.last_used_at === null ? 'never' : formatTime(client.last_used_at)),
            },
          ]}
          actions={[
            {
              label: 'Remove',
              about: (client) => client.name,
              style: 'danger',
              confirm: {
                title: (client) => `Remove ${client.name}?`,
                body: () => (
                  <p>
                    Every grant people gave it is revoked at once, and its tokens are refused. This cannot be undone.
                  </p>
                ),
                confirmLabel: 'Remove app',
                danger: true,
                run: async (client) => {
                  await unwrap(
                    api.DELETE('/v1/organization/oauth-clients/{id}', { params: { path: { id: client.client_id } } }),
                  );
                  setDone(`${client.name} removed: the grants people gave it are revoked.`);
                  list.reload();
                },
              },
            },
          ]}
        />
      )}
    </>
  );
}
