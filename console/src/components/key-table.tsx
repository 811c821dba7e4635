import type { ReactNode } from 'react';
import type { ApiKey, RevokedBy } from '../api/contract';
import { compactId, formatRateLimit, formatTime, keyName, relativeTime } from '../format';
import { Link } from '../router';
import { type Column, RecordTable } from './record-table';
import { Revoker } from './revoked-by';

/** A key as the list shows it (docs/api.md#api-key-object). */
export type ListedKey = ApiKey;

export function StatusBadge({ status }: { status: string }) {
  return <span className={`badge badge-${status.toLowerCase()}`}>{status}</span>;
}

/**
 * When a revoked credential was revoked: what matters once it is, rather than the expiry it no longer reaches; and by
 * whom, where the list says (an admin's list: docs/api.md#who-revoked-a-credential).
 */
export function Revoked({ at, by }: { at: string | null; by?: RevokedBy | null }) {
  if (at === null) return null;
  return (
    <>
      <span className="detail">
        revoked <time dateTime={at}>{formatTime(at)}</time>
      </span>
      {by !== undefined && by !== null && <Revoker by={by} />}
    </>
  );
}

export function Expiry({ value, status }: { value: string | null; status: string }) {
  if (status === 'REVOKED') return <span className="muted">no longer applies</span>;
  if (value === null) return <span className="muted">never</span>;
  return (
    <time dateTime={value} title={value}>
      {formatTime(value)}
      {status === 'ACTIVE' && <span className="muted"> ({relativeTime(value)})</span>}
    </time>
  );
}

function LastUsed({ apiKey }: { apiKey: ListedKey }) {
  if (apiKey.last_used_at === null) return <span className="muted">never used</span>;
  return (
    <>
      <time dateTime={apiKey.last_used_at}>{formatTime(apiKey.last_used_at)}</time>
      {apiKey.last_used_ip ? <span className="detail">from {apiKey.last_used_ip}</span> : null}
      {apiKey.last_used_user_agent ? (
        <span className="detail user-agent" title={apiKey.last_used_user_agent}>
          {apiKey.last_used_user_agent}
        </span>
      ) : null}
    </>
  );
}

/** A credential's scopes, one a line; none: what it is good for then (`none`). */
export function Scopes({ scopes, none = 'identifies its owner only' }: { scopes: readonly string[]; none?: string }) {
  if (scopes.length === 0) return <span className="muted">none ({none})</span>;
  return (
    <ul className="scopes">
      {scopes.map((scope) => (
        <li key={scope}>
          <code>{scope}</code>
        </li>
      ))}
    </ul>
  );
}

/** Where the key may be used from and how often, compactly: the first address, and how many more (all on hover). */
function Limits({ apiKey }: { apiKey: ListedKey }) {
  const cidrs = apiKey.allowed_cidrs;
  return (
    <>
      {cidrs === null ? (
        <span className="detail muted">any address</span>
      ) : (
        <span className="detail" title={cidrs.join('\n')}>
          from <code>{cidrs[0]}</code>
          {cidrs.length > 1 && ` and ${cidrs.length - 1} more`}
        </span>
      )}
      {apiKey.rate_limit === null ? (
        <span className="detail muted">no rate limit</span>
      ) : (
        <span className="detail">{formatRateLimit(apiKey.rate_limit)}</span>
      )}
    </>
  );
}

/** Which key replaced this one, or which one this replaced, as far as the page shows (docs/api.md#api-key-object). */
function Rotation({ apiKey, keys }: { apiKey: ListedKey; keys: ListedKey[] }) {
  const replacement = apiKey.replaced_by === null ? undefined : keys.find((key) => key.id === apiKey.replaced_by);
  const replaced = keys.filter((key) => key.replaced_by === apiKey.id);
  return (
    <>
      {apiKey.replaced_by !== null && (
        <span className="detail rotation">
          Replaced by{' '}
          {replacement === undefined ? `key ${compactId(apiKey.replaced_by).slice(0, 8)}…` : keyName(replacement)}
          {apiKey.status === 'ACTIVE' && apiKey.expires_at !== null && (
            <> · grace period until {formatTime(apiKey.expires_at)}</>
          )}
        </span>
      )}
      {replaced.map((old) => (
        <span key={old.id} className="detail rotation">
          Replaces {keyName(old)}
        </span>
      ))}
    </>
  );
}

/**
 * The keys as a RecordTable: below 640 px wide each row becomes a card (styles.css), every cell keeping its column's
 * name (data-label).
 */
export function KeyTable<K extends ListedKey>({
  keys,
  caption,
  owner,
  actions,
  link,
  revokedBy,
}: {
  keys: K[];
  caption: string;
  owner?: (key: K) => ReactNode;
  actions: (key: K) => ReactNode;
  /** The key's own page (its usage over time), when it has one. */
  link?: (key: K) => string;
  /** Who revoked a revoked key, where the list carries it. */
  revokedBy?: (key: K) => RevokedBy | null;
}) {
  const columns: Array<Column<K> | false> = [
    {
      header: 'Label',
      cell: (key) => (
        <>
          {link === undefined ? (
            key.label === '' ? (
              <span className="muted">(no label)</span>
            ) : (
              key.label
            )
          ) : (
            <Link to={link(key)}>{key.label === '' ? '(no label)' : key.label}</Link>
          )}
          <span className="detail id" title="The key's id, as in the key string: dev.<id>.<secret>.<check>">
            {compactId(key.id)}
          </span>
        </>
      ),
    },
    owner !== undefined && { header: 'Owner', cell: owner },
    {
      header: 'Status',
      cell: (key) => (
        <>
          <StatusBadge status={key.status} />
          <Revoked at={key.revoked_at} by={revokedBy?.(key)} />
          <Rotation apiKey={key} keys={keys} />
        </>
      ),
    },
    { header: 'Scopes', cell: (key) => <Scopes scopes={key.scopes} /> },
    { header: 'Limits', cell: (key) => <Limits apiKey={key} /> },
    { header: 'Created', cell: (key) => <time dateTime={key.created_at}>{formatTime(key.created_at)}</time> },
    { header: 'Expires', cell: (key) => <Expiry value={key.expires_at} status={key.status} /> },
    { header: 'Last used', cell: (key) => <LastUsed apiKey={key} /> },
    { header: 'Actions', hideHeader: true, className: 'row-actions', cell: actions },
  ];
  return (
    <RecordTable
      caption={caption}
      rows={keys}
      rowKey={(key) => key.id}
      rowProps={(key) => ({ 'data-key-id': key.id })}
      columns={columns.filter((column) => column !== false)}
      empty="No keys."
    />
  );
}
