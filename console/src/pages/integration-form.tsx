import { type FormEvent, useId, useState } from 'react';
import type { components } from '../../../client';
import { api, unwrap } from '../api/client';
import { validationOf } from '../api/errors';
import { ErrorMessage, Loading } from '../components/feedback';
import { ValidationTable } from '../components/validation-table';
import { useLoad, useTitle } from '../hooks';
import { Link, navigate } from '../router';
import { LastFour } from '../components/last-four';

type Site = components['schemas']['MonitoringCredentialsDto']['site'];
type Outcome = components['schemas']['ValidationOutcomeView'];
type Integration = components['schemas']['IntegrationView'];

const SITES: Site[] = [
  'datadoghq.com',
  'us3.datadoghq.com',
  'us5.datadoghq.com',
  'datadoghq.eu',
  'ap1.datadoghq.com',
  'ap2.datadoghq.com',
  'uk1.datadoghq.com',
  'ddog-gov.com',
  'us2.ddog-gov.com',
];

/** Said once on the list after a save (the list clears it once shown). */
let savedNotice: string | undefined;
export function savedIntegrationNotice(): string | undefined {
  return savedNotice;
}
export function clearSavedIntegrationNotice(): void {
  savedNotice = undefined;
}

/**
 * Create or edit a monitoring integration. "Validate" runs the fourteen checks without saving;
 * "Save" validates again on the server and is refused, with the reason and the checks, when the
 * keys are invalid or a required permission is missing (docs/api.md#post-v1notification-integrations).
 */
export function IntegrationFormPage({ id }: { id?: string }) {
  useTitle(id === undefined ? 'New integration' : 'Edit integration');
  const existing = useLoad(
    async () =>
      id === undefined
        ? undefined
        : (await unwrap(api.GET('/v1/notification-integrations/{id}', { params: { path: { id } } })))
            .notification_integration,
    id ?? 'new',
  );
  if (id === undefined) return <IntegrationForm />;
  if (existing.data === undefined) {
    return (
      <>
        <h1>Edit integration</h1>
        <ErrorMessage error={existing.error} />
        {existing.loading && <Loading what="the integration" />}
      </>
    );
  }
  return <IntegrationForm existing={existing.data} />;
}

function IntegrationForm({ existing }: { existing?: Integration }) {
  const editing = existing !== undefined;
  const ids = { name: useId(), site: useId(), apiKey: useId(), appKey: useId(), keysHint: useId() };
  const [name, setName] = useState(existing?.name ?? '');
  const [site, setSite] = useState<Site>(existing?.config.site ?? 'datadoghq.com');
  const [apiKey, setApiKey] = useState('');
  const [applicationKey, setApplicationKey] = useState('');
  const [validation, setValidation] = useState<Outcome>();
  const [busy, setBusy] = useState<'validate' | 'save'>();
  const [error, setError] = useState<unknown>();

  const keysEntered = apiKey.trim() !== '' && applicationKey.trim() !== '';

  const validate = async () => {
    setBusy('validate');
    setError(undefined);
    try {
      const answer = await unwrap(
        api.POST('/v1/notification-integrations/monitoring/validate', {
          body: { api_key: apiKey.trim(), application_key: applicationKey.trim(), site },
        }),
      );
      setValidation(answer.validation);
    } catch (failure) {
      setError(failure);
      setValidation(validationOf(failure));
    } finally {
      setBusy(undefined);
    }
  };

  const save = async (event: FormEvent) => {
    event.preventDefault();
    setBusy('save');
    setError(undefined);
    try {
      if (existing === undefined) {
        await unwrap(
          api.POST('/v1/notification-integrations', {
            body: {
              type: 'monitoring',
              name: name.trim(),
              config: { api_key: apiKey.trim(), application_key: applicationKey.trim(), site },
            },
          }),
        );
      } else {
        const config = {
          ...(apiKey.trim() === '' ? {} : { api_key: apiKey.trim() }),
          ...(applicationKey.trim() === '' ? {} : { application_key: applicationKey.trim() }),
          ...(site === existing.config.site ? {} : { site }),
        };
        await unwrap(
          api.PATCH('/v1/notification-integrations/{id}', {
            params: { path: { id: existing.id } },
            body: { name: name.trim(), ...(Object.keys(config).length === 0 ? {} : { config }) },
          }),
        );
      }
      savedNotice = `Integration “${name.trim()}” saved.`;
      navigate('/integrations');
    } catch (failure) {
      setError(failure);
      setValidation(validationOf(failure) ?? validation);
      setBusy(undefined);
    }
  };

  return (
    <>
      <h1>{editing ? `Edit “${existing.name}”` : 'New integration'}</h1>
      <p>
        <Link to="/integrations">Back to integrations</Link>
      </p>
      <form
        className="panel"
        onSubmit={(event) => void save(event)}
        aria-label={editing ? 'Edit integration' : 'New integration'}
      >
        <div className="field">
          <label htmlFor={ids.name}>Name</label>
          <input
            id={ids.name}
            required
            maxLength={255}
            value={name}
            autoComplete="off"
            onChange={(e) => setName(e.target.value)}
          />
        </div>
        <div className="field">
          <label htmlFor={ids.site}>Site</label>
          <select id={ids.site} value={site} onChange={(e) => setSite(e.target.value as Site)}>
            {SITES.map((value) => (
              <option key={value} value={value}>
                {value}
              </option>
            ))}
          </select>
        </div>
        {editing ? (
          <p className="hint" id={ids.keysHint}>
            Stored keys: <LastFour value={existing.config.api_key_last4} label="API key" /> and{' '}
            <LastFour value={existing.config.application_key_last4} label="Application key" />. Leave a key empty to
            keep it; saving checks the keys again either way.
          </p>
        ) : (
          <p className="hint" id={ids.keysHint}>
            Both keys are stored encrypted and never shown again, only their last four characters.
          </p>
        )}
        {/* Uncontrolled: React would otherwise copy what is typed into the value attribute, where the DOM shows it. */}
        <div className="field">
          <label htmlFor={ids.apiKey}>API key</label>
          <input
            id={ids.apiKey}
            type="password"
            required={!editing}
            maxLength={256}
            autoComplete="off"
            autoCapitalize="none"
            spellCheck={false}
            aria-describedby={ids.keysHint}
            onChange={(e) => setApiKey(e.target.value)}
          />
        </div>
        <div className="field">
          <label htmlFor={ids.appKey}>Application key</label>
          <input
            id={ids.appKey}
            type="password"
            required={!editing}
            maxLength={256}
            autoComplete="off"
            autoCapitalize="none"
            spellCheck={false}
            aria-describedby={ids.keysHint}
            onChange={(e) => setApplicationKey(e.target.value)}
          />
        </div>
        <ErrorMessage error={error} />
        <div className="actions">
          <button
            type="button"
            className="button"
            disabled={busy !== undefined || !keysEntered}
            onClick={() => void validate()}
          >
            {busy === 'validate' ? 'Validating…' : 'Validate'}
          </button>
          <button type="submit" className="button button-primary" disabled={busy !== undefined}>
            {busy === 'save' ? 'Saving…' : 'Save integration'}
          </button>
        </div>
        {!keysEntered && <p className="hint">Enter both keys to validate them before saving.</p>}
      </form>
      {validation !== undefined && <ValidationTable validation={validation} caption="Permission checks" />}
    </>
  );
}
