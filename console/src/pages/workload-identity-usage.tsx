import { api, unwrap } from '../api/client';
import { LoadStatus } from '../components/feedback';
import { StatusBadge } from '../components/key-table';
import { RevokedFact } from '../components/revoked-by';
import { UsagePanel, type UsageRequest } from '../components/usage-panel';
import { formatTime } from '../format';
import { useLoad, useTitle } from '../hooks';
import { Link } from '../router';

/**
 * One of the member's workload identities: what it matches, who revoked it once revoked, and its usage over time
 * (docs/console.md#pages).
 */
export function WorkloadIdentityPage({ id }: { id: string }) {
  const identity = useLoad(
    async () => (await unwrap(api.GET('/v1/workload-identities/{id}', { params: { path: { id } } }))).workload_identity,
    id,
  );
  const data = identity.data;
  const name = data === undefined ? 'Workload identity' : `Workload identity “${data.label || data.subject}”`;
  useTitle(name);
  const load = async (query: UsageRequest) =>
    (await unwrap(api.GET('/v1/workload-identities/{id}/usage', { params: { path: { id }, query } }))).usage;
  return (
    <>
      <p className="breadcrumb">
        <Link to="/workload-identities">Workload identities</Link>
      </p>
      <div className="page-heading">
        <h1>{name}</h1>
        {data !== undefined && <StatusBadge status={data.status} />}
      </div>
      <LoadStatus loaded={identity} what="the workload identity" />
      {data !== undefined && (
        <>
          <dl className="credential-facts">
            <div>
              <dt>Issuer</dt>
              <dd>
                <code>{data.issuer}</code>
              </dd>
            </div>
            <div>
              <dt>Subject</dt>
              <dd>
                <code>{data.subject}</code>
              </dd>
            </div>
            <div>
              <dt>Created</dt>
              <dd>{formatTime(data.created_at)}</dd>
            </div>
            <RevokedFact
              revokedAt={data.revoked_at}
              load={async () =>
                (await unwrap(api.GET('/v1/workload-identities/{id}/revoked-by', { params: { path: { id } } })))
                  .revoked_by
              }
              cacheKey={`identity-${id}`}
            />
            <div>
              <dt>Last used</dt>
              <dd>{data.last_used_at === null ? 'never' : formatTime(data.last_used_at)}</dd>
            </div>
          </dl>
          <UsagePanel label={name} load={load} cacheKey={`identity-${id}`} />
        </>
      )}
    </>
  );
}
