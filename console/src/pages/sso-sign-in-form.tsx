import { type FormEvent, useId, useState } from 'react';

/**
 * "Sign in with single sign-on" (docs/console.md#single-sign-on): the organization's name, then the browser goes to
 * GET /v1/console/sso, which sends it on to the organization's identity provider. A navigation, not a form submission:
 * the console's Content-Security-Policy allows none (`form-action 'none'`).
 */
export function SingleSignOnForm() {
  const ids = { heading: useId(), org: useId(), hint: useId() };
  const [org, setOrg] = useState('');
  const [leaving, setLeaving] = useState(false);

  const submit = (event: FormEvent) => {
    event.preventDefault();
    const name = org.trim();
    if (name === '') return;
    setLeaving(true);
    window.location.assign(`${window.location.origin}/v1/console/sso?org=${encodeURIComponent(name)}`);
  };

  return (
    <section aria-labelledby={ids.heading}>
      <h2 id={ids.heading}>Single sign-on</h2>
      <form className="panel" onSubmit={submit} aria-labelledby={ids.heading}>
        <div className="field">
          <label htmlFor={ids.org}>Organization</label>
          <input
            id={ids.org}
            name="org"
            required
            maxLength={255}
            autoComplete="organization"
            autoCapitalize="none"
            spellCheck={false}
            value={org}
            aria-describedby={ids.hint}
            onChange={(event) => setOrg(event.target.value)}
          />
          <p className="hint" id={ids.hint}>
            Your organization&apos;s name in Gatehouse, such as <code>acme</code>. You then sign in with your
            company&apos;s identity provider, if your organization has set one up.
          </p>
        </div>
        <div className="actions">
          <button type="submit" className="button button-primary" disabled={leaving}>
            Sign in with single sign-on
          </button>
        </div>
        {leaving && (
          <p role="status" className="message message-muted">
            Going to your identity provider…
          </p>
        )}
      </form>
    </section>
  );
}
