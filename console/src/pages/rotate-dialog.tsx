import { useId, useState } from 'react';
import { api, unwrap } from '../api/client';
import type { RotatedApiKey } from '../api/contract';
import { ConfirmDialog } from '../components/dialog';
import type { ListedKey } from '../components/key-table';
import { keyName } from '../format';

const GRACE_PERIODS = [
  { seconds: 0, label: 'None: the old key stops working now' },
  { seconds: 3600, label: '1 hour' },
  { seconds: 86400, label: '1 day' },
  { seconds: 604800, label: '7 days' },
];

/** Rotation: a new key with the same label and scopes; the old one works for the grace period, then stops. */
export function RotateDialog({
  apiKey,
  onRotated,
  onClose,
}: {
  apiKey: ListedKey;
  onRotated: (rotated: RotatedApiKey, graceSeconds: number) => void;
  onClose: () => void;
}) {
  const graceId = useId();
  const [grace, setGrace] = useState(86400);
  return (
    <ConfirmDialog
      title={`Rotate ${keyName(apiKey)}`}
      confirmLabel="Rotate key"
      onClose={onClose}
      onConfirm={async () => {
        const rotated = await unwrap(
          api.POST('/v1/user-api-keys/{id}/rotate', {
            params: { path: { id: apiKey.id } },
            body: { grace_period_seconds: grace },
          }),
        );
        onRotated(rotated, grace);
      }}
    >
      <p>
        A new key replaces this one, with the same label and scopes. During the grace period both work, so you can put
        the new key in place; then the old one stops.
      </p>
      <div className="field">
        <label htmlFor={graceId}>Grace period for the old key</label>
        <select id={graceId} value={grace} onChange={(event) => setGrace(Number(event.target.value))}>
          {GRACE_PERIODS.map((period) => (
            <option key={period.seconds} value={period.seconds}>
              {period.label}
            </option>
          ))}
        </select>
      </div>
    </ConfirmDialog>
  );
}
