import { useState } from 'react';
import { api, unwrap } from '../api/client';
import type { components } from '../../../client';
import { ConfirmDialog } from '../components/dialog';
import { Empty, LoadStatus, Success } from '../components/feedback';
import { formatTime } from '../format';
import { useLoad, useTitle } from '../hooks';

type Grant = components['schemas']['GrantView'];

/** The apps the person allowed to act for them at resource servers (docs/mcp.md#grants), and their revocation. */
export function ConnectedAppsPage() {
  useTitle('Connected apps');
  const list = useLoad(() => unwrap(api.GET('/v1/grants')), 'grants');
  const [revoking, setRevoking] = useState<Grant>();
  const [done, setDone] = useState<string>();

  const revoke = async (grant: Grant) => {
    await unwrap(api.DELETE('/v1/grants/{id}', { params: { path: { id: grant.id } } }));
    setDone(`${grant.client_name} can no longer act for you at ${grant.resource}.`);
    list.reload();
  };

  return (
    <>
      <h1>Connected apps</h1>
      <p className="lead">Apps you allowed to act for you at resource servers. Revoking one stops it at once.</p>
      {done !== undefined && <Success>{done}</Success>}
      <LoadStatus loaded={list} what="connected apps" />
      {list.data !== undefined &&
        (list.data.grants.length === 0 ? (
          <Empty>No connected apps.</Empty>
        ) : (
          <div className="table-wrap">
            <table className="responsive">
              <caption className="visually-hidden">Connected apps</caption>
              <thead>
                <tr>
                  <th scope="col">App</th>
                  <th scope="col">Resource</th>
                  <th scope="col">Permissions</th>
                  <th scope="col">Status</th>
                  <th scope="col">Last used</th>
                  <th scope="col">
                    <span className="visually-hidden">Actions</span>
                  </th>
                </tr>
              </thead>
              <tbody>
                {list.data.grants.map((grant) => (
                  <tr key={grant.id}>
                    <td>
                      {grant.client_name} <span className="muted">{grant.client_id}</span>
                    </td>
                    <td>{grant.resource}</td>
                    <td>{grant.scopes.join(' ')}</td>
                    <td>{grant.status}</td>
                    <td>{grant.last_used_at === null ? 'never' : formatTime(grant.last_used_at)}</td>
                    <td>
                      {grant.status === 'active' && (
                        <button type="button" className="button" onClick={() => setRevoking(grant)}>
                          Revoke
                        </button>
                      )}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        ))}
      {revoking !== undefined && (
        <ConfirmDialog
          title={`Revoke ${revoking.client_name}?`}
          confirmLabel="Revoke"
          danger
          onConfirm={() => revoke(revoking)}
          onClose={() => setRevoking(undefined)}
        >
          It stops acting for you at {revoking.resource} at once.
        </ConfirmDialog>
      )}
    </>
  );
}
