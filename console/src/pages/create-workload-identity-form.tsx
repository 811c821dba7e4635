import { type FormEvent, useId, useState } from 'react';
import { api, unwrap } from '../api/client';
import type { OrganizationSettings } from '../api/contract';
import type { WorkloadIdentity, WorkloadIssuer } from '../api/workload-identities';
import { CheckboxList, useSelection } from '../components/checkbox-list';
import { ErrorMessage } from '../components/feedback';
import { FormActions } from '../components/form-actions';
import { defaultScopes, PERMISSIONS } from '../permissions';
import type { Session } from '../session';
import { type Platform, platformOf } from '../workload-snippets';

/** As the server's limit (docs/workload-identities.md#post-v1workload-identities). */
const MAX_CONDITIONS = 16;
const DAY_MS = 86_400_000;

const EXPIRY_CHOICES = [
  { value: 'none', label: 'No expiry' },
  { value: '30', label: '30 days' },
  { value: '90', label: '90 days' },
  { value: '365', label: '1 year' },
] as const;
type ExpiryChoice = (typeof EXPIRY_CHOICES)[number]['value'];

interface Condition {
  key: number;
  claim: string;
  value: string;
}

const SUBJECTS: Record<Platform, string> = {
  github:
    'GitHub: repo:OWNER/REPO:ref:refs/heads/main, repo:OWNER/REPO:environment:NAME or repo:OWNER/REPO:pull_request.',
  gitlab: 'GitLab: project_path:GROUP/PROJECT:ref_type:branch:ref:main.',
  kubernetes: 'Kubernetes: system:serviceaccount:NAMESPACE:NAME.',
  other:
    'GitHub Actions: repo:OWNER/REPO:environment:NAME. GitLab: project_path:GROUP/PROJECT:ref_type:branch:ref:main. ' +
    'Kubernetes: system:serviceaccount:NAMESPACE:NAME.',
};

/** The usual subjects of the platform the issuer is (all of them when it is not a known one). */
function subjectExamples(issuer: string | undefined): string {
  return SUBJECTS[issuer === undefined ? 'other' : platformOf(issuer, '')];
}

/**
 * A new workload identity: label, trusted issuer, subject, conditions, scopes and expiry. Only the permissions the
 * member has are offered; the management ones start unticked, as for a key. The server checks every rule again and
 * says which one failed.
 */
export function CreateWorkloadIdentityForm({
  session,
  issuers,
  organization,
  onCreated,
  onCancel,
}: {
  session: Session;
  issuers: WorkloadIssuer[];
  organization: OrganizationSettings | undefined;
  onCreated: (created: WorkloadIdentity) => void;
  onCancel: () => void;
}) {
  const ids = { heading: useId(), label: useId(), issuer: useId(), subject: useId(), hint: useId(), expiry: useId() };
  const offered = PERMISSIONS.filter((p) => session.permissions.includes(p.name));
  const [label, setLabel] = useState('');
  const [issuerId, setIssuerId] = useState(issuers[0]?.id ?? '');
  const [subject, setSubject] = useState('');
  const [conditions, setConditions] = useState<Condition[]>([]);
  const [nextKey, setNextKey] = useState(1);
  const [scopes, toggleScope] = useSelection(PERMISSIONS, defaultScopes(session.permissions));
  const [expiry, setExpiry] = useState<ExpiryChoice>('none');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>();
  const policyDays = organization?.max_key_lifetime_days ?? null;
  const issuer = issuers.find((entry) => entry.id === issuerId);

  const change = (key: number, field: 'claim' | 'value', text: string) =>
    setConditions((current) => current.map((c) => (c.key === key ? { ...c, [field]: text } : c)));

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      const body = {
        label: label.trim(),
        trusted_issuer_id: issuerId,
        subject,
        conditions: Object.fromEntries(conditions.map((c) => [c.claim.trim(), c.value])),
        scopes,
        ...(expiry === 'none' ? {} : { expires_at: new Date(Date.now() + Number(expiry) * DAY_MS).toISOString() }),
      };
      onCreated((await unwrap(api.POST('/v1/workload-identities', { body }))).workload_identity);
    } catch (failure) {
      setError(failure);
    } finally {
      setBusy(false);
    }
  };

  return (
    <form className="panel" onSubmit={(event) => void submit(event)} aria-labelledby={ids.heading}>
      <h2 id={ids.heading}>New workload identity</h2>
      <div className="field">
        <label htmlFor={ids.label}>Label</label>
        <input
          id={ids.label}
          value={label}
          maxLength={255}
          autoComplete="off"
          placeholder="e.g. production deploys"
          onChange={(event) => setLabel(event.target.value)}
        />
      </div>
      <div className="field">
        <label htmlFor={ids.issuer}>Trusted issuer</label>
        <select id={ids.issuer} value={issuerId} required onChange={(event) => setIssuerId(event.target.value)}>
          {issuers.map((entry) => (
            <option key={entry.id} value={entry.id}>
              {entry.issuer}
            </option>
          ))}
        </select>
        {issuer !== undefined && (
          <p className="hint">
            Its tokens must carry the audience <code>{issuer.audience}</code>.
          </p>
        )}
      </div>
      <div className="field">
        <label htmlFor={ids.subject}>Subject</label>
        <input
          id={ids.subject}
          value={subject}
          required
          maxLength={1024}
          autoComplete="off"
          spellCheck={false}
          aria-describedby={ids.hint}
          onChange={(event) => setSubject(event.target.value)}
        />
        <p className="hint" id={ids.hint}>
          Compared exactly with the token’s <code>sub</code>: no wildcard. {subjectExamples(issuer?.issuer)}
        </p>
      </div>
      <fieldset className="field">
        <legend>Conditions: other claims the token must carry, exactly</legend>
        <p className="hint">
          For a GitHub Actions token, for example <code>repository</code>, <code>ref</code> or <code>environment</code>.
          Not <code>iss</code>, <code>sub</code>, <code>aud</code>, <code>exp</code>, <code>nbf</code>, <code>iat</code>{' '}
          or <code>jti</code>. When two identities match one token, the one with the most conditions is used.
        </p>
        {conditions.map((condition, index) => (
          <div className="toolbar" key={condition.key}>
            <div className="field inline-field">
              <label htmlFor={`${ids.subject}-claim-${condition.key}`}>Claim {index + 1}</label>
              <input
                id={`${ids.subject}-claim-${condition.key}`}
                value={condition.claim}
                required
                maxLength={128}
                spellCheck={false}
                onChange={(event) => change(condition.key, 'claim', event.target.value)}
              />
            </div>
            <div className="field inline-field">
              <label htmlFor={`${ids.subject}-value-${condition.key}`}>Value {index + 1}</label>
              <input
                id={`${ids.subject}-value-${condition.key}`}
                value={condition.value}
                required
                maxLength={1024}
                spellCheck={false}
                onChange={(event) => change(condition.key, 'value', event.target.value)}
              />
            </div>
            <button
              type="button"
              className="button button-small"
              onClick={() => setConditions((current) => current.filter((c) => c.key !== condition.key))}
            >
              Remove<span className="visually-hidden"> condition {index + 1}</span>
            </button>
          </div>
        ))}
        {conditions.length < MAX_CONDITIONS && (
          <button
            type="button"
            className="button button-small"
            onClick={() => {
              setConditions((current) => [...current, { key: nextKey, claim: '', value: '' }]);
              setNextKey((key) => key + 1);
            }}
          >
            Add a condition
          </button>
        )}
      </fieldset>
      <fieldset className="field">
        <legend>Scopes: what its tokens may do</legend>
        <p className="hint">
          Never more than your role allows. Tick management permissions only if the workload needs them.
        </p>
        <CheckboxList name="scopes" options={offered} selected={scopes} onToggle={toggleScope} />
      </fieldset>
      <div className="field">
        <label htmlFor={ids.expiry}>Expires</label>
        <select id={ids.expiry} value={expiry} onChange={(event) => setExpiry(event.target.value as ExpiryChoice)}>
          {EXPIRY_CHOICES.filter(
            (choice) => policyDays === null || choice.value === 'none' || Number(choice.value) <= policyDays,
          ).map((choice) => (
            <option key={choice.value} value={choice.value}>
              {choice.value === 'none' && policyDays !== null ? `Longest allowed (${policyDays} days)` : choice.label}
            </option>
          ))}
        </select>
      </div>
      <ErrorMessage error={error} />
      <FormActions
        label="Create workload identity"
        busyLabel="Creating…"
        busy={busy}
        disabled={issuer === undefined}
        onCancel={onCancel}
      />
    </form>
  );
}
