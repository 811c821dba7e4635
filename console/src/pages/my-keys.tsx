import { useState } from 'react';
import { api, unwrap } from '../api/client';
import type { CreatedApiKey, RotatedApiKey } from '../api/contract';
import { ConfirmDialog } from '../components/dialog';
import { Empty, LoadStatus, Success } from '../components/feedback';
import { KeyTable, type ListedKey } from '../components/key-table';
import { Pager } from '../components/pager';
import { SecretPanel } from '../components/secret-panel';
import { ShowRevokedToggle, useShowRevoked } from '../components/show-revoked-toggle';
import { formatDuration, formatTime, keyName } from '../format';
import { useLoad, useTitle } from '../hooks';
import { can, type Session } from '../session';
import { CreateKeyForm } from './create-key-form';
import { EditKeyForm } from './edit-key-form';
import { RotateDialog } from './rotate-dialog';

const PAGE_SIZE = 20;

/** The organization's settings (any member may read them): the key policy the create form offers. */
async function organizationSettings() {
  return (await unwrap(api.GET('/v1/organization'))).organization;
}

/** The member's own keys: list, create (secret shown once), edit (label, allowlist, rate limit), rotate, revoke. */
export function MyKeysPage({ session }: { session: Session }) {
  useTitle('My API keys');
  const [page, setPage] = useState(1);
  const [includeRevoked, showRevoked] = useShowRevoked(setPage);
  const [creating, setCreating] = useState(false);
  const [secret, setSecret] = useState<{ value: string; title: string; note?: string }>();
  const [revoking, setRevoking] = useState<ListedKey>();
  const [rotating, setRotating] = useState<ListedKey>();
  const [editing, setEditing] = useState<ListedKey>();
  const [done, setDone] = useState<string>();
  const keys = useLoad(
    () =>
      unwrap(
        api.GET('/v1/user-api-keys', {
          params: { query: { page, limit: PAGE_SIZE, include_revoked: includeRevoked } },
        }),
      ),
    `${page}/${includeRevoked}`,
  );
  const organization = useLoad(organizationSettings, 'organization');
  const mayCreate = can(session, 'api_keys:create');
  const mayRevoke = can(session, 'api_keys:revoke');

  const created = (answer: CreatedApiKey) => {
    setCreating(false);
    setDone(undefined);
    setSecret({ value: answer.opaque_key, title: `Your new key ${keyName(answer.api_key)}` });
    setPage(1);
    keys.reload();
  };

  const rotated = (answer: RotatedApiKey, grace: number) => {
    const old = answer.previous_api_key;
    const note =
      grace === 0 || old.expires_at === null || old.status !== 'ACTIVE'
        ? 'The old key has been revoked.'
        : `The old key ${keyName(old)} keeps working for ${formatDuration(grace)}, until ${formatTime(old.expires_at)}.`;
    setDone(undefined);
    setSecret({
      value: answer.opaque_key,
      title: `Your new key ${keyName(answer.api_key)}, replacing ${keyName(old)}`,
      note,
    });
    keys.reload();
  };

  return (
    <>
      <div className="page-heading">
        <h1>My API keys</h1>
        {mayCreate && !creating && secret === undefined && (
          <button type="button" className="button button-primary" onClick={() => setCreating(true)}>
            Create key
          </button>
        )}
      </div>
      <p className="lead">
        Keys let your scripts and services act as you: each is exchanged for short-lived access tokens at{' '}
        <code>POST /v1/token</code>.
      </p>
      {secret !== undefined && (
        <SecretPanel
          secret={secret.value}
          title={secret.title}
          note={secret.note}
          onDone={() => setSecret(undefined)}
        />
      )}
      {creating && (
        <CreateKeyForm
          session={session}
          organization={organization.data}
          onCreated={created}
          onCancel={() => setCreating(false)}
        />
      )}
      {editing !== undefined && (
        <EditKeyForm
          key={editing.id}
          apiKey={editing}
          organization={organization.data}
          onSaved={(saved) => {
            setEditing(undefined);
            setDone(`Key ${keyName(saved)} saved.`);
            keys.reload();
          }}
          onCancel={() => setEditing(undefined)}
        />
      )}
      {done !== undefined && <Success>{done}</Success>}
      <div className="toolbar">
        <ShowRevokedToggle what="keys" checked={includeRevoked} onChange={showRevoked} />
      </div>
      <LoadStatus loaded={keys} what="your keys" />
      {keys.data !== undefined &&
        (keys.data.api_keys.length === 0 ? (
          <Empty>
            {includeRevoked ? 'You have no keys.' : 'You have no active keys.'}
            {mayCreate ? ' Create one to get started.' : ''}
          </Empty>
        ) : (
          <>
            <KeyTable
              keys={keys.data.api_keys}
              caption="Your API keys"
              link={(key) => `/keys/${key.id}`}
              actions={(key) =>
                key.status === 'ACTIVE' ? (
                  <>
                    {mayCreate && (
                      <button
                        type="button"
                        className="button button-small"
                        onClick={() => {
                          setDone(undefined);
                          setEditing(key);
                        }}
                      >
                        Edit<span className="visually-hidden"> {keyName(key)}</span>
                      </button>
                    )}
                    {/* A key in its grace period has been replaced already: rotate the new one. */}
                    {mayCreate && mayRevoke && key.replaced_by === null && (
                      <button type="button" className="button button-small" onClick={() => setRotating(key)}>
                        Rotate<span className="visually-hidden"> {keyName(key)}</span>
                      </button>
                    )}
                    {mayRevoke && (
                      <button
                        type="button"
                        className="button button-small button-danger"
                        onClick={() => setRevoking(key)}
                      >
                        Revoke<span className="visually-hidden"> {keyName(key)}</span>
                      </button>
                    )}
                  </>
                ) : null
              }
            />
            <Pager page={page} limit={PAGE_SIZE} total={keys.data.total_count} onPage={setPage} label="Your keys" />
          </>
        ))}
      {revoking !== undefined && (
        <ConfirmDialog
          title={`Revoke ${keyName(revoking)}?`}
          confirmLabel="Revoke key"
          danger
          onClose={() => setRevoking(undefined)}
          onConfirm={async () => {
            await unwrap(api.DELETE('/v1/user-api-keys/{id}', { params: { path: { id: revoking.id } } }));
            setDone(`Key ${keyName(revoking)} revoked.`);
            keys.reload();
          }}
        >
          <p>
            Created {formatTime(revoking.created_at)}
            {revoking.last_used_at === null ? ', never used' : `, last used ${formatTime(revoking.last_used_at)}`}.
            {revoking.replaced_by !== null &&
              ' It has been replaced by a rotation: revoking it ends its grace period now.'}
          </p>
          <p>
            Anything using this key, and every access token made from it, stops working at once. This cannot be undone.
          </p>
        </ConfirmDialog>
      )}
      {rotating !== undefined && (
        <RotateDialog apiKey={rotating} onRotated={rotated} onClose={() => setRotating(undefined)} />
      )}
    </>
  );
}
