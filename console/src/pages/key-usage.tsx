import { api, unwrap } from '../api/client';
import { LoadStatus } from '../components/feedback';
import { StatusBadge } from '../components/key-table';
import { UsagePanel, type UsageRequest } from '../components/usage-panel';
import { compactId, formatTime, keyName } from '../format';
import { useLoad, useTitle } from '../hooks';
import { Link } from '../router';

/** One of the member's keys: what it is, and its usage over time (docs/console.md#pages). */
export function KeyPage({ id }: { id: string }) {
  const key = useLoad(
    async () => (await unwrap(api.GET('/v1/user-api-keys/{id}', { params: { path: { id } } }))).api_key,
    id,
  );
  const name = key.data === undefined ? 'Key' : `Key ${keyName(key.data)}`;
  useTitle(name);
  const load = async (query: UsageRequest) =>
    (await unwrap(api.GET('/v1/user-api-keys/{id}/usage', { params: { path: { id }, query } }))).usage;
  return (
    <>
      <p className="breadcrumb">
        <Link to="/keys">My keys</Link>
      </p>
      <div className="page-heading">
        <h1>{name}</h1>
        {key.data !== undefined && <StatusBadge status={key.data.status} />}
      </div>
      <LoadStatus loaded={key} what="the key" />
      {key.data !== undefined && (
        <>
          <dl className="credential-facts">
            <div>
              <dt>Id</dt>
              <dd>
                <code>{compactId(key.data.id)}</code>
              </dd>
            </div>
            <div>
              <dt>Created</dt>
              <dd>{formatTime(key.data.created_at)}</dd>
            </div>
            <div>
              <dt>Expires</dt>
              <dd>{key.data.expires_at === null ? 'never' : formatTime(key.data.expires_at)}</dd>
            </div>
            <div>
              <dt>Last used</dt>
              <dd>
                {key.data.last_used_at === null
                  ? 'never'
                  : `${formatTime(key.data.last_used_at)}${key.data.last_used_ip ? ` from ${key.data.last_used_ip}` : ''}`}
              </dd>
            </div>
          </dl>
          <UsagePanel label={name} load={load} cacheKey={`key-${id}`} />
        </>
      )}
    </>
  );
}
