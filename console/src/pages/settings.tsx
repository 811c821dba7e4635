import { type FormEvent, useId, useState } from 'react';
import type { OrganizationSettings } from '../api/contract';
import { api, unwrap } from '../api/client';
import { ErrorMessage, Loading, Success } from '../components/feedback';
import { formatDuration } from '../format';
import { useLoad, useTitle } from '../hooks';

/** Organization settings (organization:write): access-token lifetime and key policy. */
export function SettingsPage() {
  useTitle('Organization settings');
  const settings = useLoad(async () => (await unwrap(api.GET('/v1/organization'))).organization, 'settings');
  return (
    <>
      <h1>Organization settings</h1>
      {settings.data === undefined && <ErrorMessage error={settings.error} />}
      {settings.loading && settings.data === undefined && <Loading what="the settings" />}
      {settings.data !== undefined && <SettingsForm settings={settings.data} />}
    </>
  );
}

function SettingsForm({ settings: loaded }: { settings: OrganizationSettings }) {
  const ids = {
    lifetime: useId(),
    limit: useId(),
    days: useId(),
    lifetimeHint: useId(),
    daysHint: useId(),
    allowlist: useId(),
    allowlistHint: useId(),
  };
  const [settings, setSettings] = useState(loaded);
  const [lifetime, setLifetime] = useState(String(loaded.access_token_lifetime));
  const [limited, setLimited] = useState(loaded.max_key_lifetime_days !== null);
  const [days, setDays] = useState(String(loaded.max_key_lifetime_days ?? 90));
  const [allowlist, setAllowlist] = useState(loaded.require_key_allowlist);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>();
  const [saved, setSaved] = useState(false);

  const save = async (event: FormEvent) => {
    event.preventDefault();
    setBusy(true);
    setError(undefined);
    setSaved(false);
    try {
      const answer = await unwrap(
        api.PATCH('/v1/organization', {
          body: {
            access_token_lifetime: Number(lifetime),
            max_key_lifetime_days: limited ? Number(days) : null,
            require_key_allowlist: allowlist,
          },
        }),
      );
      setSettings(answer.organization);
      setSaved(true);
    } catch (failure) {
      setError(failure);
    } finally {
      setBusy(false);
    }
  };

  return (
    <form className="panel" onSubmit={(event) => void save(event)} aria-label="Organization settings">
      <p className="lead">
        {settings.name}: access tokens live {formatDuration(settings.access_token_lifetime)};{' '}
        {settings.max_key_lifetime_days === null
          ? 'keys may live for ever.'
          : `new keys live at most ${settings.max_key_lifetime_days} days.`}{' '}
        {settings.require_key_allowlist
          ? 'New keys must name the addresses they are used from.'
          : 'New keys may be used from any address.'}
      </p>
      <div className="field">
        <label htmlFor={ids.lifetime}>Access token lifetime (seconds)</label>
        <input
          id={ids.lifetime}
          type="number"
          inputMode="numeric"
          required
          min={60}
          max={86400}
          step={1}
          value={lifetime}
          aria-describedby={ids.lifetimeHint}
          onChange={(event) => setLifetime(event.target.value)}
        />
        <p className="hint" id={ids.lifetimeHint}>
          From 60 (one minute) to 86400 (one day). Applies to tokens exchanged from now on.
        </p>
      </div>
      <fieldset className="field">
        <legend>Key policy</legend>
        <label className="inline" htmlFor={ids.limit}>
          <input
            id={ids.limit}
            type="checkbox"
            checked={limited}
            onChange={(event) => setLimited(event.target.checked)}
          />
          Limit how long a new key may live
        </label>
        {limited && (
          <div className="field">
            <label htmlFor={ids.days}>Longest key lifetime (days)</label>
            <input
              id={ids.days}
              type="number"
              inputMode="numeric"
              required
              min={1}
              max={3650}
              step={1}
              value={days}
              aria-describedby={ids.daysHint}
              onChange={(event) => setDays(event.target.value)}
            />
            <p className="hint" id={ids.daysHint}>
              From 1 to 3650. Keys created without an expiry get this one; existing keys keep theirs.
            </p>
          </div>
        )}
        <label className="inline" htmlFor={ids.allowlist}>
          <input
            id={ids.allowlist}
            type="checkbox"
            checked={allowlist}
            aria-describedby={ids.allowlistHint}
            onChange={(event) => setAllowlist(event.target.checked)}
          />
          Require an allowlist on new keys
        </label>
        <p className="hint" id={ids.allowlistHint}>
          A new key must name the addresses it may be used from, and not every address. Existing keys keep theirs.
        </p>
      </fieldset>
      <ErrorMessage error={error} />
      {saved && <Success>Settings saved.</Success>}
      <div className="actions">
        <button type="submit" className="button button-primary" disabled={busy}>
          {busy ? 'Saving…' : 'Save settings'}
        </button>
      </div>
    </form>
  );
}
