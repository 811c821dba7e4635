import { type FormEvent, useId, useState } from 'react';
import { api, unwrap } from '../api/client';
import type { RevokedBy } from '../api/contract';
import { ConfirmDialog } from '../components/dialog';
import { Email } from '../components/email';
import { Empty, LoadStatus, Success } from '../components/feedback';
import { KeyTable, type ListedKey } from '../components/key-table';
import { keyName } from '../format';
import { Pager } from '../components/pager';
import { ShowRevokedToggle, useShowRevoked } from '../components/show-revoked-toggle';
import { useLoad, useTitle } from '../hooks';
import type { Session } from '../session';

/** A key as organization key management lists it: with its owner's e-mail address and who revoked it. */
type OrganizationKey = ListedKey & { owner_email: string | null; revoked_by: RevokedBy | null };

const PAGE_SIZE = 20;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const EMAIL = /^[^\s@]+@[^\s@]+$/;

/** Every member's keys (api_keys:manage): filter by member, revoke any. */
export function OrganizationKeysPage({ session }: { session: Session }) {
  useTitle('Organization keys');
  const filterId = useId();
  const [page, setPage] = useState(1);
  const [includeRevoked, showRevoked] = useShowRevoked(setPage);
  const [userInput, setUserInput] = useState('');
  const [member, setMember] = useState<{ user_id: string } | { email: string }>();
  const [filterError, setFilterError] = useState<string>();
  const [revoking, setRevoking] = useState<OrganizationKey>();
  const [done, setDone] = useState<string>();
  const keys = useLoad(
    () =>
      unwrap(
        api.GET('/v1/organization/api-keys', {
          params: {
            query: { page, limit: PAGE_SIZE, include_revoked: includeRevoked, ...member },
          },
        }),
      ),
    `${page}/${includeRevoked}/${JSON.stringify(member ?? {})}`,
  );

  const applyFilter = (event: FormEvent) => {
    event.preventDefault();
    const value = userInput.trim();
    if (value !== '' && !UUID.test(value) && !EMAIL.test(value)) {
      setFilterError('Name a member by e-mail address (dev@acme.test) or user id (a UUID such as 3f2b…-…).');
      return;
    }
    setFilterError(undefined);
    setMember(value === '' ? undefined : UUID.test(value) ? { user_id: value.toLowerCase() } : { email: value });
    setPage(1);
  };

  return (
    <>
      <h1>Organization keys</h1>
      <p className="lead">
        Every member’s keys in {session.organization.name}: a key’s label opens its usage over time. Revoking a key here
        stops it at once.
      </p>
      <form className="toolbar" onSubmit={applyFilter} role="search" aria-label="Filter keys">
        <div className="field inline-field">
          <label htmlFor={filterId}>Member (e-mail or user id)</label>
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
        <ShowRevokedToggle what="keys" checked={includeRevoked} onChange={showRevoked} />
      </form>
      {filterError !== undefined && (
        <p className="message message-error" id={`${filterId}-error`} role="alert">
          {filterError}
        </p>
      )}
      {done !== undefined && <Success>{done}</Success>}
      <LoadStatus loaded={keys} what="the organization’s keys" />
      {keys.data !== undefined &&
        (keys.data.api_keys.length === 0 ? (
          <Empty>No keys match.</Empty>
        ) : (
          <>
            <KeyTable
              keys={keys.data.api_keys}
              caption="Keys of every member"
              link={(key) => `/organization/keys/${key.id}`}
              revokedBy={(key) => key.revoked_by}
              owner={(key) => (
                <>
                  {key.owner_email !== null && <Email address={key.owner_email} />}
                  <code className="id detail">{key.user_id}</code>
                  {key.user_id === session.userId && <span className="detail">(you)</span>}
                </>
              )}
              actions={(key) =>
                key.status === 'ACTIVE' ? (
                  <button type="button" className="button button-small button-danger" onClick={() => setRevoking(key)}>
                    Revoke<span className="visually-hidden"> {keyName(key)}</span>
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
          title={`Revoke ${keyName(revoking)} of ${revoking.owner_email ?? revoking.user_id}?`}
          confirmLabel="Revoke key"
          danger
          onClose={() => setRevoking(undefined)}
          onConfirm={async () => {
            await unwrap(api.DELETE('/v1/organization/api-keys/{id}', { params: { path: { id: revoking.id } } }));
            setDone(`Key ${keyName(revoking)} of ${revoking.owner_email ?? revoking.user_id} revoked.`);
            keys.reload();
          }}
        >
          <p>
            This key belongs to {revoking.owner_email ?? 'member'} (<code>{revoking.user_id}</code>). Anything using it
            stops working at once; the member cannot undo this.
          </p>
        </ConfirmDialog>
      )}
    </>
  );
}
