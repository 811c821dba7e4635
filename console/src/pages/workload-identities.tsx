import { useState } from 'react';
import { api, unwrap } from '../api/client';
import type { WorkloadIdentity } from '../api/workload-identities';
import { ErrorMessage, Loading, LoadStatus, Success } from '../components/feedback';
import { Expiry, Revoked, Scopes, StatusBadge } from '../components/key-table';
import { Pager } from '../components/pager';
import { RecordTable } from '../components/record-table';
import { ShowRevokedToggle, useShowRevoked } from '../components/show-revoked-toggle';
import { SnippetPanel } from '../components/snippet-panel';
import { formatTime } from '../format';
import { useLoad, useTitle } from '../hooks';
import { Link } from '../router';
import { can, type Session } from '../session';
import { CreateWorkloadIdentityForm } from './create-workload-identity-form';

const PAGE_SIZE = 20;

/** How dialogs and notices name an identity: its label, else its subject. */
function identityName(identity: WorkloadIdentity): string {
  return identity.label === '' ? `“${identity.subject}”` : `“${identity.label}”`;
}

async function organizationSettings() {
  return (await unwrap(api.GET('/v1/organization'))).organization;
}

async function workloadIssuers() {
  return (await unwrap(api.GET('/v1/workload-identities/trusted-issuers'))).trusted_issuers;
}

function Matches({ identity }: { identity: WorkloadIdentity }) {
  const conditions = Object.entries(identity.conditions);
  return (
    <>
      <code className="detail">{identity.issuer}</code>
      <span className="detail">
        sub = <code>{identity.subject}</code>
      </span>
      {conditions.map(([claim, value]) => (
        <span key={claim} className="detail">
          {claim} = <code>{value}</code>
        </span>
      ))}
    </>
  );
}

/**
 * The member's workload identities (docs/workload-identities.md): keys without secrets. List, create (then how a
 * GitHub Actions workflow or a Kubernetes pod uses it), revoke.
 */
export function WorkloadIdentitiesPage({ session }: { session: Session }) {
  useTitle('Workload identities');
  const [page, setPage] = useState(1);
  const [includeRevoked, showRevoked] = useShowRevoked(setPage);
  const [creating, setCreating] = useState(false);
  const [shown, setShown] = useState<{ identity: WorkloadIdentity; title: string }>();
  const [done, setDone] = useState<string>();
  const mayCreate = can(session, 'workload_identities:create');
  const mayRevoke = can(session, 'workload_identities:revoke');
  const identities = useLoad(
    () =>
      unwrap(
        api.GET('/v1/workload-identities', {
          params: { query: { page, limit: PAGE_SIZE, include_revoked: includeRevoked } },
        }),
      ),
    `${page}/${includeRevoked}`,
  );
  // Only who may create one may read the issuers (and their audiences): others see the snippets with a placeholder.
  const issuers = useLoad(() => (mayCreate ? workloadIssuers() : Promise.resolve([])), `issuers/${mayCreate}`);
  const organization = useLoad(organizationSettings, 'organization');
  const audienceOf = (identity: WorkloadIdentity) =>
    issuers.data?.find((entry) => entry.issuer === identity.issuer)?.audience;

  const created = (identity: WorkloadIdentity) => {
    setCreating(false);
    setDone(undefined);
    setShown({ identity, title: `Your new workload identity ${identityName(identity)}: how to use it` });
    setPage(1);
    identities.reload();
  };

  return (
    <>
      <div className="page-heading">
        <h1>Workload identities</h1>
        {mayCreate && !creating && (
          <button
            type="button"
            className="button button-primary"
            onClick={() => {
              setShown(undefined);
              setCreating(true);
            }}
          >
            Create workload identity
          </button>
        )}
      </div>
      <p className="lead">
        Keys without secrets: a CI job or a Kubernetes workload exchanges the token its platform already gives it for
        short-lived access tokens that act as you, at <code>POST /oauth/token</code>. Nothing to store, nothing to leak.
      </p>
      {creating &&
        (issuers.data === undefined ? (
          <>
            <ErrorMessage error={issuers.error} />
            {issuers.loading && <Loading what="the trusted issuers" />}
          </>
        ) : issuers.data.length === 0 ? (
          <div className="panel">
            <p>
              {session.organization.name} trusts no workload issuer yet. An operator adds one with{' '}
              <code>gatehouse trusted-issuer add --org {session.organization.name} --issuer URL --kind workloads</code>.
            </p>
            <div className="actions">
              <button type="button" className="button" onClick={() => setCreating(false)}>
                Close
              </button>
            </div>
          </div>
        ) : (
          <CreateWorkloadIdentityForm
            session={session}
            issuers={issuers.data}
            organization={organization.data}
            onCreated={created}
            onCancel={() => setCreating(false)}
          />
        ))}
      {shown !== undefined && (
        <SnippetPanel
          identity={shown.identity}
          audience={audienceOf(shown.identity)}
          title={shown.title}
          onDone={() => setShown(undefined)}
        />
      )}
      {done !== undefined && <Success>{done}</Success>}
      <div className="toolbar">
        <ShowRevokedToggle what="identities" checked={includeRevoked} onChange={showRevoked} />
      </div>
      <LoadStatus loaded={identities} what="your workload identities" />
      {identities.data !== undefined && (
        <>
          <RecordTable
            caption="Your workload identities"
            rows={identities.data.workload_identities}
            rowKey={(identity) => identity.id}
            rowProps={(identity) => ({ 'data-identity-id': identity.id })}
            empty={
              (includeRevoked ? 'You have no workload identities.' : 'You have no active workload identities.') +
              (mayCreate ? ' Create one to let a workload act as you without a secret.' : '')
            }
            columns={[
              {
                header: 'Label',
                cell: (identity) => (
                  <>
                    <Link to={`/workload-identities/${identity.id}`}>
                      {identity.label === '' ? '(no label)' : identity.label}
                    </Link>
                    <span className="detail id">{identity.id}</span>
                  </>
                ),
              },
              { header: 'Matches', cell: (identity) => <Matches identity={identity} /> },
              {
                header: 'Status',
                cell: (identity) => (
                  <>
                    <StatusBadge status={identity.status} />
                    <Revoked at={identity.revoked_at} />
                  </>
                ),
              },
              { header: 'Scopes', cell: (identity) => <Scopes scopes={identity.scopes} none="identifies you only" /> },
              {
                header: 'Expires',
                cell: (identity) => <Expiry value={identity.expires_at} status={identity.status} />,
              },
              {
                header: 'Last used',
                cell: (identity) =>
                  identity.last_used_at === null ? (
                    <span className="muted">never used</span>
                  ) : (
                    <>
                      <time dateTime={identity.last_used_at}>{formatTime(identity.last_used_at)}</time>
                      {identity.last_used_ip && <span className="detail">from {identity.last_used_ip}</span>}
                    </>
                  ),
              },
            ]}
            actions={[
              {
                label: 'How to use',
                about: identityName,
                when: (identity) => identity.status === 'ACTIVE',
                onClick: (identity) => {
                  setCreating(false);
                  setShown({ identity, title: `How to use ${identityName(identity)}` });
                },
              },
              {
                label: 'Revoke',
                about: identityName,
                style: 'danger',
                when: (identity) => mayRevoke && identity.status === 'ACTIVE',
                confirm: {
                  title: (identity) => `Revoke ${identityName(identity)}?`,
                  body: (identity) => (
                    <>
                      <p>
                        Created {formatTime(identity.created_at)}
                        {identity.last_used_at === null
                          ? ', never used'
                          : `, last used ${formatTime(identity.last_used_at)}`}
                        .
                      </p>
                      <p>
                        Workloads can no longer exchange their tokens through it, and every access token already made
                        through it stops working at once. This cannot be undone.
                      </p>
                    </>
                  ),
                  confirmLabel: 'Revoke workload identity',
                  danger: true,
                  run: async (identity) => {
                    await unwrap(api.DELETE('/v1/workload-identities/{id}', { params: { path: { id: identity.id } } }));
                    setDone(`Workload identity ${identityName(identity)} revoked.`);
                    if (shown?.identity.id === identity.id) setShown(undefined);
                    identities.reload();
                  },
                },
              },
            ]}
          />
          <Pager
            page={page}
            limit={PAGE_SIZE}
            total={identities.data.total_count}
            onPage={setPage}
            label="Your workload identities"
          />
        </>
      )}
    </>
  );
}
