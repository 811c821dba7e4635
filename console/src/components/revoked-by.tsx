import type { RevokedBy } from '../api/contract';
import { formatTime } from '../format';
import { useLoad } from '../hooks';
import { Email } from './email';

/** The revocation's reason (docs/api.md#who-revoked-a-credential) as words. */
const REASONS: Record<string, string> = {
  user: 'its owner',
  admin: 'an admin',
  rotated: 'rotated without a grace period',
  exposed: 'reported as exposed',
  member_removed: 'its owner was removed from the organization',
  trusted_issuer_removed: 'its trusted issuer was removed',
};

/** Who revoked it and why, in a detail line; nothing when nobody and no reason is known. */
export function Revoker({ by }: { by: RevokedBy }) {
  const why = by.reason === null ? undefined : (REASONS[by.reason] ?? by.reason);
  if (by.user_id === null) return why === undefined ? null : <span className="detail">{why}</span>;
  return (
    <span className="detail" data-testid="revoked-by">
      by {by.email === null ? <code className="id">{by.user_id}</code> : <Email address={by.email} className="" />}
      {why !== undefined && <> ({why})</>}
    </span>
  );
}

/**
 * A credential page's "Revoked" fact: when, and who revoked it and why as the audit trail says (read only once it is
 * revoked); nothing while it is not.
 */
export function RevokedFact({
  revokedAt,
  load,
  cacheKey,
}: {
  revokedAt: string | null;
  load: () => Promise<RevokedBy | null>;
  cacheKey: string;
}) {
  const revoker = useLoad(async () => (revokedAt === null ? null : load()), `${cacheKey}/${revokedAt ?? 'live'}`);
  if (revokedAt === null) return null;
  return (
    <div>
      <dt>Revoked</dt>
      <dd>
        <time dateTime={revokedAt}>{formatTime(revokedAt)}</time>
        {revoker.data !== undefined && revoker.data !== null && <Revoker by={revoker.data} />}
      </dd>
    </div>
  );
}
