import { useState } from 'react';
import { api, unwrap } from '../api/client';
import type { BusyCredential } from '../api/contract';
import { Email } from '../components/email';
import { LoadStatus } from '../components/feedback';
import { StatusBadge } from '../components/key-table';
import { RecordTable } from '../components/record-table';
import { RangePicker, USAGE_RANGES, type UsageRange, type UsageRequest, UsagePanel } from '../components/usage-panel';
import { compactId } from '../format';
import { useLoad, useTitle } from '../hooks';
import type { Session } from '../session';

const count = new Intl.NumberFormat();
const KINDS: Record<string, string> = { api_key: 'API key', workload_identity: 'Workload identity' };

function credentialName(credential: BusyCredential): string {
  const kind = KINDS[credential.kind] ?? credential.kind;
  return credential.label === '' ? `${kind} ${compactId(credential.id).slice(0, 8)}…` : `${kind} “${credential.label}”`;
}

/** The share of the busiest's uses, as a bar (SVG: no inline style under the console's Content-Security-Policy). */
function Share({ credential, busiest }: { credential: BusyCredential; busiest: number }) {
  const total = credential.succeeded + credential.refused;
  const width = (part: number) => (busiest === 0 ? 0 : (part / busiest) * 100);
  return (
    <svg className="share" viewBox="0 0 100 8" preserveAspectRatio="none" aria-hidden="true">
      <rect x="0" y="0" width={width(credential.succeeded)} height="8" className="usage-succeeded" />
      <rect
        x={width(credential.succeeded)}
        y="0"
        width={width(total - credential.succeeded)}
        height="8"
        className="usage-refused"
      />
    </svg>
  );
}

/**
 * The organization's busiest keys and workload identities (api_keys:manage and workload_identities:manage), as Unkey's
 * and Auth0's dashboards list their top keys and applications: the range's counts, and one's chart on request.
 */
export function OrganizationUsagePage({ session }: { session: Session }) {
  useTitle('Usage');
  const [range, setRange] = useState<UsageRange>(USAGE_RANGES[1]);
  const [selected, setSelected] = useState<BusyCredential>();
  const top = useLoad(
    async () =>
      unwrap(
        api.GET('/v1/organization/usage/top', {
          params: { query: { from: new Date(Date.now() - range.minutes * 60_000).toISOString(), limit: 20 } },
        }),
      ),
    range.id,
  );
  const credentials = top.data?.credentials ?? [];
  const busiest = Math.max(0, ...credentials.map((credential) => credential.succeeded + credential.refused));

  const load = (credential: BusyCredential) => async (query: UsageRequest) => {
    const path = { params: { path: { id: credential.id }, query } };
    return credential.kind === 'workload_identity'
      ? (await unwrap(api.GET('/v1/organization/workload-identities/{id}/usage', path))).usage
      : (await unwrap(api.GET('/v1/organization/api-keys/{id}/usage', path))).usage;
  };

  return (
    <>
      <div className="page-heading">
        <h1>Usage</h1>
        <button type="button" className="button button-small" onClick={top.reload}>
          Refresh
        </button>
      </div>
      <p className="lead">
        The busiest keys and workload identities of {session.organization.name}: successful and refused uses at the
        token endpoints, forward auth and introspection. Kept 30 days.
      </p>
      <RangePicker
        value={range}
        onChange={(next) => {
          setRange(next);
          setSelected(undefined);
        }}
      />
      <LoadStatus loaded={top} what="the busiest credentials" />
      {top.data !== undefined && (
        <RecordTable
          caption="The busiest keys and workload identities, most uses first"
          className="busiest"
          rows={credentials}
          rowKey={(credential) => credential.id}
          rowProps={(credential) => ({
            'data-credential-id': credential.id,
            ...(selected?.id === credential.id ? { 'aria-current': 'true' as const } : {}),
          })}
          empty="No key or workload identity was used in this range."
          columns={[
            {
              header: 'Credential',
              cell: (credential) => (
                <>
                  {credentialName(credential)}
                  <span className="detail id">{compactId(credential.id)}</span>
                </>
              ),
            },
            {
              header: 'Owner',
              cell: (credential) =>
                credential.owner_email === null ? (
                  <code className="id">{credential.user_id}</code>
                ) : (
                  <Email address={credential.owner_email} />
                ),
            },
            { header: 'Status', cell: (credential) => <StatusBadge status={credential.status} /> },
            { header: 'Successful', className: 'number', cell: (credential) => count.format(credential.succeeded) },
            { header: 'Refused', className: 'number', cell: (credential) => count.format(credential.refused) },
            {
              header: 'Share',
              hideHeader: true,
              className: 'row-actions',
              cell: (credential) => (
                <>
                  <Share credential={credential} busiest={busiest} />
                  <button type="button" className="button button-small" onClick={() => setSelected(credential)}>
                    Chart<span className="visually-hidden"> of {credentialName(credential)}</span>
                  </button>
                </>
              ),
            },
          ]}
        />
      )}
      {selected !== undefined && (
        <UsagePanel
          key={selected.id}
          title={`Usage of ${credentialName(selected)}`}
          label={credentialName(selected)}
          load={load(selected)}
          cacheKey={`${selected.kind}-${selected.id}`}
        />
      )}
    </>
  );
}
