import { useEffect, useState } from 'react';
import { api, unwrap } from '../api/client';
import { ErrorMessage, Loading } from '../components/feedback';
import { useTitle } from '../hooks';
import { navigate } from '../router';
import { startSession, takeNotice } from '../session';
import { afterSignIn } from './consent';
import { SingleSignOnForm } from './sso-sign-in-form';

/**
 * What the link opened carries in its fragment, which the browser never sends to a server: a sign-in link's code
 * (`#code=…`), or an invitation's (`#invitation=…`, an admin's invitation to join: docs/console.md#members).
 */
type Credential = { kind: 'code' | 'invitation'; value: string };

function credentialFromFragment(): Credential | undefined {
  const fragment = new URLSearchParams(window.location.hash.slice(1));
  for (const kind of ['code', 'invitation'] as const) {
    const value = fragment.get(kind);
    if (value !== null && value !== '') return { kind, value };
  }
  return undefined;
}

const same = (a: Credential, b: Credential): boolean => a.kind === b.kind && a.value === b.value;

/**
 * One trade per code at a time, even if the page mounts twice (React's strict mode in development). Only a trade
 * still under way is picked up by a new mount: after a sign-out the page starts from no code, and a link opened
 * again (a used one, in the same tab) is traded again, so the server says it was used.
 */
let trading: { credential: Credential; result: Promise<void>; settled: boolean } | undefined;

function trade(credential: Credential): Promise<void> {
  if (trading === undefined || !same(trading.credential, credential) || trading.settled) {
    const body = { code: credential.value };
    const answered =
      credential.kind === 'code'
        ? unwrap(api.POST('/v1/console/sessions', { body }))
        : unwrap(api.POST('/v1/console/invitations/accept', { body }));
    const result = answered.then((answer) => {
      startSession({
        token: answer.session_token,
        expiresAt: Date.now() + answer.expires_in * 1000,
        userId: answer.user_id,
        email: answer.email,
        organization: answer.organization,
        role: answer.role,
        permissions: answer.permissions,
      });
    });
    const current = { credential, result, settled: false };
    const settle = () => {
      current.settled = true;
    };
    result.then(settle, settle);
    trading = current;
  }
  return trading.result;
}

function pendingCredential(): Credential | undefined {
  return trading !== undefined && !trading.settled ? trading.credential : undefined;
}

export function SignInPage() {
  useTitle('Sign in');
  const [code, setCode] = useState(() => credentialFromFragment() ?? pendingCredential());
  /** Counts the links opened while the page is shown: the same link opened again is tried again. */
  const [opened, setOpened] = useState(0);
  const [error, setError] = useState<unknown>();
  const [notice] = useState(takeNotice);

  // Another link (or the same one again) opened in this tab while the page is shown changes only the fragment.
  useEffect(() => {
    const follow = () => {
      const next = credentialFromFragment();
      if (next === undefined) return;
      setError(undefined);
      setCode(next);
      setOpened((count) => count + 1);
    };
    window.addEventListener('hashchange', follow);
    return () => window.removeEventListener('hashchange', follow);
  }, []);

  useEffect(() => {
    if (code === undefined) return;
    // The code leaves the address bar (and the tab's history) before anything else happens.
    window.history.replaceState(null, '', `${window.location.pathname}${window.location.search}`);
    trade(code).then(
      () => navigate(afterSignIn(), { replace: true }),
      (failure: unknown) => setError(failure),
    );
  }, [code, opened]);

  return (
    <main id="main" className="sign-in" tabIndex={-1}>
      <h1>Sign in to the Gatehouse console</h1>
      {notice !== undefined && error === undefined && code === undefined && (
        <p role="status" className="message message-muted">
          {notice}
        </p>
      )}
      {code !== undefined && error === undefined && <Loading what="your session" />}
      <ErrorMessage error={error} />
      {(code === undefined || error !== undefined) && (
        <section aria-labelledby="how-to-sign-in">
          <h2 id="how-to-sign-in">How to sign in</h2>
          <p>
            Gatehouse keeps no passwords. An administrator makes you a one-time sign-in link with the admin command
            line, and you open it in this browser:
          </p>
          <pre>
            <code>npx gatehouse console-link --org ORGANIZATION --email YOU@EXAMPLE.COM</code>
          </pre>
          <p>Each link works once, for 10 minutes. Your session then lasts an hour, in this tab only.</p>
        </section>
      )}
      {(code === undefined || error !== undefined) && <SingleSignOnForm />}
    </main>
  );
}
