import { type FormEvent, useId, useState } from 'react';
import { api, unwrap } from '../api/client';
import { ConfirmDialog } from '../components/dialog';
import { Empty, ErrorMessage, Loading, Success } from '../components/feedback';
import { KeyTable, type ListedKey } from '../components/key-table';
import { Pager } from '../components/pager';
import { useLoad, useTitle } from '../hooks';
import type { Session } from '../session';

const PAGE_SIZE = 20;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Every member's keys (api_keys:manage): filter by member, revoke any. */
export function OrganizationKeysPage({ session }: { session: Session }) {
  useTitle('Organization keys');
  const filterId = useId();
  const [page, setPage] = useState(1);
  const [includeRevoked, setIncludeRevoked] = useState(false);
  const [userInput, setUserInput] = useState('');
  const [userId, setUserId] = useState<string>();
  const [filterError, setFilterError] = useState<string>();
  const [revoking, setRevoking] = useState<ListedKey>();
  const [done, setDone] = useState<string>();
  const keys = useLoad(
    () =>
      unwrap(
        api.GET('/v1/organization/api-keys', {
          params: {
            query: { page, limit: PAGE_SIZE, include_revoked: includeRevoked, ...(userId ? { user_id: userId } : {}) },
          },
        }),
      ),
    `${page}/${includeRevoked}/${userId ?? ''}`,
  );

  const applyFilter = (event: FormEvent) => {
    event.preventDefault();
    const value = userInput.trim();
    if (value !== '' && !UUID.test(value)) {
      setFilterError('A member is named by their user id, a UUID such as 3f2b…-…');
      return;
    }
    setFilterError(undefined);
    setUserId(value === '' ? undefined : value.toLowerCase());
    setPage(1);
  };

  return (
    <>
      <h1>Organization keys</h1>
      <p className="lead">Every member’s keys in {session.organization.name}. Revoking a key here stops it at once.</p>
      <form className="toolbar" onSubmit={applyFilter} role="search" aria-label="Filter keys">
        <div className="field inline-field">
          <label htmlFor={filterId}>Member (user id)</label>
          <input
            id={filterId}
            value={userInput}
            autoComplete="off"
            spellCheck={false}
            aria-invalid={filterError !== undefined}
            aria-describedby={filterError === undefined ? undefined : `${filterId}-error`}
            onChange={(event) => setUserInput(event.target.value)}
          />
        </div>
        <button type="submit" className="button">
          Filter
        </button>
        <label className="inline">
          <input
            type="checkbox"
            checked={includeRevoked}
            onChange={(event) => {
              setIncludeRevoked(event.target.checked);
              setPage(1);
            }}
          />
          Show revoked keys
        </label>
      </form>
      {filterError !== undefined && (
        <p className="message message-error" id={`${filterId}-error`} role="alert">
          {filterError}
        </p>
      )}
      {done !== undefined && <Success>{done}</Success>}
      <ErrorMessage error={keys.error} />
      {keys.loading && keys.data === undefined && <Loading what="the organization’s keys" />}
      {keys.data !== undefined &&
        (keys.data.api_keys.length === 0 ? (
          <Empty>No keys match.</Empty>
        ) : (
          <>
            <KeyTable
              keys={keys.data.api_keys}
              caption="Keys of every member"
              owner={(key) => (
                <>
                  <code className="id">{key.user_id}</code>
                  {key.user_id === session.userId && <span className="detail">(you)</span>}
                </>
              )}
              actions={(key) =>
                key.status === 'ACTIVE' ? (
                  <button type="button" className="button button-small button-danger" onClick={() => setRevoking(key)}>
                    Revoke<span className="visually-hidden"> {key.label || key.id}</span>
                  </button>
                ) : null
              }
            />
            <Pager
              page={page}
              limit={PAGE_SIZE}
              total={keys.data.total_count}
              onPage={setPage}
              label="Organization keys"
            />
          </>
        ))}
      {revoking !== undefined && (
        <ConfirmDialog
          title={`Revoke “${revoking.label || revoking.id}”?`}
          confirmLabel="Revoke key"
          danger
          onClose={() => setRevoking(undefined)}
          onConfirm={async () => {
            await unwrap(api.DELETE('/v1/organization/api-keys/{id}', { params: { path: { id: revoking.id } } }));
            setDone(`Key “${revoking.label || revoking.id}” of member ${revoking.user_id} revoked.`);
            keys.reload();
          }}
        >
          <p>
            This key belongs to member <code>{revoking.user_id}</code>. Anything using it stops working at once; the
            member cannot undo this.
          </p>
        </ConfirmDialog>
      )}
    </>
  );
}
