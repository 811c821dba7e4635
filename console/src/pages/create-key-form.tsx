import { type FormEvent, useId, useState } from 'react';
import { api, unwrap } from '../api/client';
import type { CreatedApiKey, OrganizationSettings } from '../api/contract';
import { CheckboxList, useSelection } from '../components/checkbox-list';
import { ErrorMessage } from '../components/feedback';
import { draftOf, KeyPolicyFields, policiesOf } from '../components/key-policy-fields';
import { FormActions } from '../components/form-actions';
import { defaultScopes, PERMISSIONS } from '../permissions';
import type { Session } from '../session';

const EXPIRY_CHOICES = [
  { value: 'none', label: 'No expiry' },
  { value: '30', label: '30 days' },
  { value: '90', label: '90 days' },
  { value: '365', label: '1 year' },
  { value: 'date', label: 'On a date…' },
] as const;

type ExpiryChoice = (typeof EXPIRY_CHOICES)[number]['value'];

function sameSet(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((item) => b.includes(item));
}

/** `expires_at` for the choice, or undefined for none (the organization's policy then applies). */
function expiresAt(choice: ExpiryChoice, date: string): string | undefined {
  if (choice === 'none') return undefined;
  if (choice === 'date') return new Date(`${date}T23:59:59`).toISOString();
  return new Date(Date.now() + Number(choice) * 86400_000).toISOString();
}

/** A fixed lifetime longer than the organization's key policy is not offered: the server would refuse it. */
function withinPolicy(choice: ExpiryChoice, policyDays: number | null): boolean {
  return policyDays === null || choice === 'none' || choice === 'date' || Number(choice) <= policyDays;
}

/** The last date an expiry may fall on under the policy (an expiry at the end of that day would exceed it). */
function latestDate(policyDays: number): string {
  return new Date(Date.now() + (policyDays - 1) * 86400_000).toISOString().slice(0, 10);
}

/**
 * A new key: label, expiry, scopes, allowlist and rate limit. Only the permissions the member has are offered; the
 * management ones start unticked. Scopes and expiry are sent only when they differ from the
 * defaults, which the server applies the same way (docs/api.md#post-v1user-api-keys).
 */
export function CreateKeyForm({
  session,
  organization,
  onCreated,
  onCancel,
}: {
  session: Session;
  organization: OrganizationSettings | undefined;
  onCreated: (created: CreatedApiKey) => void;
  onCancel: () => void;
}) {
  const ids = { label: useId(), expiry: useId(), date: useId(), scopes: useId(), hint: useId() };
  const offered = PERMISSIONS.filter((p) => session.permissions.includes(p.name));
  const defaults = defaultScopes(session.permissions);
  const [label, setLabel] = useState('');
  const [expiry, setExpiry] = useState<ExpiryChoice>('none');
  const [date, setDate] = useState('');
  const [scopes, toggleScope] = useSelection(PERMISSIONS, defaults);
  const [policies, setPolicies] = useState(() => draftOf());
  const [busy, setBusy] = useState(false);
  const [tomorrow] = useState(() => new Date(Date.now() + 86400_000).toISOString().slice(0, 10));
  const [error, setError] = useState<unknown>();
  const policyDays = organization?.max_key_lifetime_days ?? null;

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      const when = expiresAt(expiry, date);
      const { allowed_cidrs, rate_limit } = policiesOf(policies);
      const body = {
        label: label.trim(),
        ...(sameSet(scopes, defaults) ? {} : { scopes }),
        ...(when === undefined ? {} : { expires_at: when }),
        ...(allowed_cidrs === null ? {} : { allowed_cidrs }),
        ...(rate_limit === null ? {} : { rate_limit }),
      };
      onCreated(await unwrap(api.POST('/v1/user-api-keys', { body })));
    } catch (failure) {
      setError(failure);
    } finally {
      setBusy(false);
    }
  };

  return (
    <form className="panel" onSubmit={(event) => void submit(event)} aria-labelledby={`${ids.label}-heading`}>
      <h2 id={`${ids.label}-heading`}>New API key</h2>
      <div className="field">
        <label htmlFor={ids.label}>Label</label>
        <input
          id={ids.label}
          value={label}
          maxLength={255}
          autoComplete="off"
          placeholder="e.g. deploys from CI"
          onChange={(event) => setLabel(event.target.value)}
        />
      </div>
      <div className="field">
        <label htmlFor={ids.expiry}>Expires</label>
        <select
          id={ids.expiry}
          value={expiry}
          aria-describedby={policyDays === null ? undefined : ids.hint}
          onChange={(event) => setExpiry(event.target.value as ExpiryChoice)}
        >
          {EXPIRY_CHOICES.filter((choice) => withinPolicy(choice.value, policyDays)).map((choice) => (
            <option key={choice.value} value={choice.value}>
              {choice.value === 'none' && policyDays !== null ? `Longest allowed (${policyDays} days)` : choice.label}
            </option>
          ))}
        </select>
        {policyDays !== null && (
          <p className="hint" id={ids.hint}>
            Your organization limits keys to {policyDays} days.
          </p>
        )}
      </div>
      {expiry === 'date' && (
        <div className="field">
          <label htmlFor={ids.date}>Expiry date</label>
          <input
            id={ids.date}
            type="date"
            required
            value={date}
            min={tomorrow}
            max={policyDays === null ? undefined : latestDate(policyDays)}
            onChange={(event) => setDate(event.target.value)}
          />
        </div>
      )}
      <fieldset className="field">
        <legend>Scopes: what the key may do</legend>
        <p className="hint">
          A key never does more than your role allows. Management permissions let a leaked key mint, revoke or govern
          keys: tick them only for a key that needs them.
        </p>
        <CheckboxList name="scopes" options={offered} selected={scopes} onToggle={toggleScope} />
      </fieldset>
      <KeyPolicyFields
        draft={policies}
        onChange={setPolicies}
        allowlistRequired={organization?.require_key_allowlist ?? false}
      />
      <ErrorMessage error={error} />
      <FormActions label="Create key" busyLabel="Creating…" busy={busy} onCancel={onCancel} />
    </form>
  );
}
