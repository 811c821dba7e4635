import { useEffect, useState } from 'react';
import { api, unwrap } from '../api/client';
import type { components } from '../../../client';
import { ConfirmDialog } from '../components/dialog';
import { Empty, LoadStatus, Success } from '../components/feedback';
import { Pager } from '../components/pager';
import { formatTime } from '../format';
import { useLoad, useTitle } from '../hooks';
import { Link } from '../router';
import { can, type Session } from '../session';
import { LastFour } from '../components/last-four';
import { clearSavedIntegrationNotice, savedIntegrationNotice } from './integration-form';

type Integration = components['schemas']['IntegrationView'];
const PAGE_SIZE = 20;

/** The organization's monitoring integrations (integrations:read); changes need integrations:write. */
export function IntegrationsPage({ session }: { session: Session }) {
  useTitle('Integrations');
  const mayWrite = can(session, 'integrations:write');
  const [page, setPage] = useState(1);
  const [deleting, setDeleting] = useState<Integration>();
  const [done, setDone] = useState<string | undefined>(savedIntegrationNotice);
  useEffect(clearSavedIntegrationNotice, []);
  const list = useLoad(
    () => unwrap(api.GET('/v1/notification-integrations', { params: { query: { page, limit: PAGE_SIZE } } })),
    String(page),
  );

  return (
    <>
      <div className="page-heading">
        <h1>Integrations</h1>
        {mayWrite && (
          <Link to="/integrations/new" className="button button-primary">
            New integration
          </Link>
        )}
      </div>
      <p className="lead">
        Monitoring providers the organization sends notifications to. Keys are shown by their last four characters only.
      </p>
      {done !== undefined && <Success>{done}</Success>}
      <LoadStatus loaded={list} what="integrations" />
      {list.data !== undefined &&
        (list.data.notification_integrations.length === 0 ? (
          <Empty>No integrations yet.{mayWrite ? ' Add one with “New integration”.' : ''}</Empty>
        ) : (
          <>
            <div className="table-wrap">
              <table className="responsive">
                <caption className="visually-hidden">Integrations</caption>
                <thead>
                  <tr>
                    <th scope="col">Name</th>
                    <th scope="col">Site</th>
                    <th scope="col">API key</th>
                    <th scope="col">Application key</th>
                    <th scope="col">Required permissions</th>
                    <th scope="col">Updated</th>
                    <th scope="col">
                      <span className="visually-hidden">Actions</span>
                    </th>
                  </tr>
                </thead>
                <tbody>
                  {list.data.notification_integrations.map((integration) => (
                    <tr key={integration.id} data-integration-id={integration.id}>
                      <th scope="row" data-label="Name">
                        {integration.name}
                      </th>
                      <td data-label="Site">{integration.config.site}</td>
                      <td data-label="API key">
                        <LastFour value={integration.config.api_key_last4} label="API key" />
                      </td>
                      <td data-label="Application key">
                        <LastFour value={integration.config.application_key_last4} label="Application key" />
                      </td>
                      <td data-label="Required permissions">{integration.validation.required_permissions_status}</td>
                      <td data-label="Updated">
                        <time dateTime={integration.updated_at}>{formatTime(integration.updated_at)}</time>
                      </td>
                      <td data-label="Actions" className="row-actions">
                        {mayWrite && (
                          <>
                            <Link to={`/integrations/${integration.id}`} className="button button-small">
                              Edit<span className="visually-hidden"> {integration.name}</span>
                            </Link>
                            <button
                              type="button"
                              className="button button-small button-danger"
                              onClick={() => setDeleting(integration)}
                            >
                              Delete<span className="visually-hidden"> {integration.name}</span>
                            </button>
                          </>
                        )}
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
            <Pager page={page} limit={PAGE_SIZE} total={list.data.total_count} onPage={setPage} label="Integrations" />
          </>
        ))}
      {deleting !== undefined && (
        <ConfirmDialog
          title={`Delete “${deleting.name}”?`}
          confirmLabel="Delete integration"
          danger
          onClose={() => setDeleting(undefined)}
          onConfirm={async () => {
            await unwrap(api.DELETE('/v1/notification-integrations/{id}', { params: { path: { id: deleting.id } } }));
            setDone(`Integration “${deleting.name}” deleted.`);
            list.reload();
          }}
        >
          <p>Notifications stop going to this provider. Its stored keys are deleted.</p>
        </ConfirmDialog>
      )}
    </>
  );
}
