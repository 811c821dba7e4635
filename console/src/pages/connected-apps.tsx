import { useState } from 'react';
import { api, unwrap } from '../api/client';
import { LoadStatus, Success } from '../components/feedback';
import { RecordTable } from '../components/record-table';
import { formatTime } from '../format';
import { useLoad, useTitle } from '../hooks';

/** The apps the person allowed to act for them at resource servers (docs/mcp.md#grants), and their revocation. */
export function ConnectedAppsPage() {
  useTitle('Connected apps');
  const list = useLoad(() => unwrap(api.GET('/v1/grants')), 'grants');
  const [done, setDone] = useState<string>();

  return (
    <>
      <h1>Connected apps</h1>
      <p className="lead">Apps you allowed to act for you at resource servers. Revoking one stops it at once.</p>
      {done !== undefined && <Success>{done}</Success>}
      <LoadStatus loaded={list} what="connected apps" />
      {list.data !== undefined && (
        <RecordTable
          caption="Connected apps"
          rows={list.data.grants}
          rowKey={(grant) => grant.id}
          testId="grant"
          empty="No connected apps."
          columns={[
            {
              header: 'App',
              cell: (grant) => (
                <>
                  {grant.client_name} <code className="id detail">{grant.client_id}</code>
                </>
              ),
            },
            { header: 'Resource', cell: (grant) => <code>{grant.resource}</code> },
            {
              header: 'Permissions',
              cell: (grant) => (
                <ul className="scopes">
                  {grant.scopes.map((scope) => (
                    <li key={scope}>
                      <code>{scope}</code>
                    </li>
                  ))}
                </ul>
              ),
            },
            { header: 'Status', cell: (grant) => grant.status },
            {
              header: 'Last used',
              cell: (grant) => (grant.last_used_at === null ? 'never' : formatTime(grant.last_used_at)),
            },
          ]}
          actions={[
            {
              label: 'Revoke',
              about: (grant) => grant.client_name,
              style: 'danger',
              when: (grant) => grant.status === 'active',
              confirm: {
                title: (grant) => `Revoke ${grant.client_name}?`,
                body: (grant) => <p>It stops acting for you at {grant.resource} at once.</p>,
                confirmLabel: 'Revoke',
                danger: true,
                run: async (grant) => {
                  await unwrap(api.DELETE('/v1/grants/{id}', { params: { path: { id: grant.id } } }));
                  setDone(`${grant.client_name} can no longer act for you at ${grant.resource}.`);
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
