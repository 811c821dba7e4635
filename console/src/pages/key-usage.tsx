import { api, unwrap } from '../api/client';
import type { ApiKey, RevokedBy, Usage } from '../api/contract';
import { Email } from '../components/email';
import { LoadStatus } from '../components/feedback';
import { StatusBadge } from '../components/key-table';
import { RevokedFact } from '../components/revoked-by';
import { UsagePanel, type UsageRequest } from '../components/usage-panel';
import { compactId, formatTime, keyName } from '../format';
import { useLoad, useTitle } from '../hooks';
import { Link } from '../router';

/** Where a key page reads its key: the member's own routes, or organization key management's (an admin's). */
interface KeySource {
  list: { path: string; label: string };
  key: (id: string) => Promise<ApiKey & { owner_email?: string | null }>;
  usage: (id: string, query: UsageRequest) => Promise<Usage>;
  revokedBy: (id: string) => Promise<RevokedBy | null>;
}

const OWN: KeySource = {
  list: { path: '/keys', label: 'My keys' },
  key: async (id) => (await unwrap(api.GET('/v1/user-api-keys/{id}', { params: { path: { id } } }))).api_key,
  usage: async (id, query) =>
    (await unwrap(api.GET('/v1/user-api-keys/{id}/usage', { params: { path: { id }, query } }))).usage,
  revokedBy: async (id) =>
    (await unwrap(api.GET('/v1/user-api-keys/{id}/revoked-by', { params: { path: { id } } }))).revoked_by,
};

const ORGANIZATION: KeySource = {
  list: { path: '/organization/keys', label: 'Organization keys' },
  key: async (id) => (await unwrap(api.GET('/v1/organization/api-keys/{id}', { params: { path: { id } } }))).api_key,
  usage: async (id, query) =>
    (await unwrap(api.GET('/v1/organization/api-keys/{id}/usage', { params: { path: { id }, query } }))).usage,
  revokedBy: async (id) =>
    (await unwrap(api.GET('/v1/organization/api-keys/{id}/revoked-by', { params: { path: { id } } }))).revoked_by,
};

/**
 * One key: what it is, who revoked it once revoked, and its usage over time (docs/console.md#pages). The member's own
 * (`/keys/<id>`), or any key of the organization for an admin (`/organization/keys/<id>`, with its owner).
 */
export function KeyPage({ id, organization = false }: { id: string; organization?: boolean }) {
  const source = organization ? ORGANIZATION : OWN;
  const key = useLoad(() => source.key(id), `${String(organization)}/${id}`);
  const name = key.data === undefined ? 'Key' : `Key ${keyName(key.data)}`;
  useTitle(name);
  return (
    <>
      <p className="breadcrumb">
        <Link to={source.list.path}>{source.list.label}</Link>
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
            {organization && (
              <div>
                <dt>Owner</dt>
                <dd>
                  {key.data.owner_email ? (
                    <Email address={key.data.owner_email} className="" />
                  ) : (
                    <code>{key.data.user_id}</code>
                  )}
                </dd>
              </div>
            )}
            <div>
              <dt>Created</dt>
              <dd>{formatTime(key.data.created_at)}</dd>
            </div>
            {key.data.revoked_at === null && (
              <div>
                <dt>Expires</dt>
                <dd>{key.data.expires_at === null ? 'never' : formatTime(key.data.expires_at)}</dd>
              </div>
            )}
            <RevokedFact
              revokedAt={key.data.revoked_at}
              load={() => source.revokedBy(id)}
              cacheKey={`${String(organization)}/${id}`}
            />
            <div>
              <dt>Last used</dt>
              <dd>
                {key.data.last_used_at === null
                  ? 'never'
                  : `${formatTime(key.data.last_used_at)}${key.data.last_used_ip ? ` from ${key.data.last_used_ip}` : ''}`}
              </dd>
            </div>
          </dl>
          <UsagePanel
            label={name}
            load={(query) => source.usage(id, query)}
            cacheKey={`${organization ? 'organization-key' : 'key'}-${id}`}
          />
        </>
      )}
    </>
  );
}
