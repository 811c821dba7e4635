import { type FormEvent, useId, useState } from 'react';
import { api, unwrap } from '../api/client';
import type { ApiKey, OrganizationSettings } from '../api/contract';
import { ErrorMessage } from '../components/feedback';
import { draftOf, KeyPolicyFields, policiesOf } from '../components/key-policy-fields';
import { FormActions } from '../components/form-actions';
import { keyName } from '../format';

/**
 * One key's label, allowlist and rate limit, shown as they are and changed with PATCH /v1/user-api-keys/{id}
 * (docs/api.md#patch-v1user-api-keysid). Its secret, scopes and expiry do not change here: rotate for those.
 */
export function EditKeyForm({
  apiKey,
  organization,
  onSaved,
  onCancel,
}: {
  apiKey: ApiKey;
  organization: OrganizationSettings | undefined;
  onSaved: (key: ApiKey) => void;
  onCancel: () => void;
}) {
  const labelId = useId();
  const [label, setLabel] = useState(apiKey.label);
  const [policies, setPolicies] = useState(() => draftOf(apiKey));
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>();

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      const saved = await unwrap(
        api.PATCH('/v1/user-api-keys/{id}', {
          params: { path: { id: apiKey.id } },
          body: { label: label.trim(), ...policiesOf(policies) },
        }),
      );
      onSaved(saved.api_key);
    } catch (failure) {
      setError(failure);
    } finally {
      setBusy(false);
    }
  };

  return (
    <form className="panel" onSubmit={(event) => void submit(event)} aria-labelledby={`${labelId}-heading`}>
      <h2 id={`${labelId}-heading`}>Edit {keyName(apiKey)}</h2>
      <div className="field">
        <label htmlFor={labelId}>Label</label>
        <input
          id={labelId}
          value={label}
          maxLength={255}
          autoComplete="off"
          onChange={(event) => setLabel(event.target.value)}
        />
      </div>
      <KeyPolicyFields
        draft={policies}
        onChange={setPolicies}
        allowlistRequired={organization?.require_key_allowlist ?? false}
      />
      <ErrorMessage error={error} />
      <FormActions label="Save changes" busyLabel="Saving…" busy={busy} onCancel={onCancel} />
    </form>
  );
}
