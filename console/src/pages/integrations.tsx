import { useEffect, useState } from 'react';
import { api, unwrap } from '../api/client';
import { LoadStatus, Success } from '../components/feedback';
import { Pager } from '../components/pager';
import { RecordTable } from '../components/record-table';
import { formatTime } from '../format';
import { useLoad, useTitle } from '../hooks';
import { Link } from '../router';
import { can, type Session } from '../session';
import { LastFour } from '../components/last-four';
import { clearSavedIntegrationNotice, savedIntegrationNotice } from './integration-form';

const PAGE_SIZE = 20;

/** The organization's monitoring integrations (integrations:read); changes need integrations:write. */
export function IntegrationsPage({ session }: { session: Session }) {
  useTitle('Integrations');
  const mayWrite = can(session, 'integrations:write');
  const [page, setPage] = useState(1);
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
      {list.data !== undefined && (
        <>
          <RecordTable
            caption="Integrations"
            rows={list.data.notification_integrations}
            rowKey={(integration) => integration.id}
            rowProps={(integration) => ({ 'data-integration-id': integration.id })}
            empty={`No integrations yet.${mayWrite ? ' Add one with “New integration”.' : ''}`}
            columns={[
              { header: 'Name', cell: (integration) => integration.name },
              { header: 'Site', cell: (integration) => integration.config.site },
              {
                header: 'API key',
                cell: (integration) => <LastFour value={integration.config.api_key_last4} label="API key" />,
              },
              {
                header: 'Application key',
                cell: (integration) => (
                  <LastFour value={integration.config.application_key_last4} label="Application key" />
                ),
              },
              {
                header: 'Required permissions',
                cell: (integration) => integration.validation.required_permissions_status,
              },
              {
                header: 'Updated',
                cell: (integration) => (
                  <time dateTime={integration.updated_at}>{formatTime(integration.updated_at)}</time>
                ),
              },
            ]}
            actions={
              mayWrite
                ? [
                    {
                      label: 'Edit',
                      about: (integration) => integration.name,
                      to: (integration) => `/integrations/${integration.id}`,
                    },
                    {
                      label: 'Delete',
                      about: (integration) => integration.name,
                      style: 'danger',
                      confirm: {
                        title: (integration) => `Delete “${integration.name}”?`,
                        body: () => <p>Notifications stop going to this provider. Its stored keys are deleted.</p>,
                        confirmLabel: 'Delete integration',
                        danger: true,
                        run: async (integration) => {
                          await unwrap(
                            api.DELETE('/v1/notification-integrations/{id}', {
                              params: { path: { id: integration.id } },
                            }),
                          );
                          setDone(`Integration “${integration.name}” deleted.`);
                          list.reload();
                        },
                      },
                    },
                  ]
                : []
            }
          />
          <Pager page={page} limit={PAGE_SIZE} total={list.data.total_count} onPage={setPage} label="Integrations" />
        </>
      )}
    </>
  );
}
