import { useState } from 'react';
import { api, unwrap } from '../api/client';
import { ErrorMessage, Loading } from '../components/feedback';
import { useLoad, useTitle } from '../hooks';

const PENDING_KEY = 'gatehouse.console.consent';

/** The request of a consent page met before signing in: the sign-in comes back to it (this tab only). */
export function rememberConsentRequest(): void {
  const request = new URLSearchParams(window.location.search).get('request');
  if (request !== null && request !== '') window.sessionStorage.setItem(PENDING_KEY, request);
}

/** Where to go after signing in: the consent page that was waiting, else the keys. */
export function afterSignIn(): string {
  const request = window.sessionStorage.getItem(PENDING_KEY);
  return request === null ? '/keys' : `/consent?${new URLSearchParams({ request }).toString()}`;
}

function consentRequest(): string {
  return new URLSearchParams(window.location.search).get('request') ?? window.sessionStorage.getItem(PENDING_KEY) ?? '';
}

/**
 * An app asks to act for the person at a resource server (docs/mcp.md#consent): what it is (its name is its own claim;
 * its address's host is what can be trusted), what it asks, in which organization; Allow or Deny. The page is never
 * framed (the console's headers) and its decision needs the session token, which no other site can send.
 */
export function ConsentPage() {
  useTitle('Allow access?');
  const [request] = useState(consentRequest);
  const [deciding, setDeciding] = useState(false);
  const [error, setError] = useState<unknown>();
  // An earlier consent covers it: allowed at once, the page shows no question.
  const asked = useLoad(async () => {
    const answer = await unwrap(api.GET('/v1/oauth/consent', { params: { query: { request } } }));
    if (answer.remembered) {
      window.sessionStorage.removeItem(PENDING_KEY);
      const decided = await unwrap(api.POST('/v1/oauth/consent', { body: { request, decision: 'allow' } }));
      window.location.assign(decided.redirect_to);
    }
    return answer;
  }, request);

  const decide = (decision: 'allow' | 'deny') => {
    setDeciding(true);
    window.sessionStorage.removeItem(PENDING_KEY);
    unwrap(api.POST('/v1/oauth/consent', { body: { request, decision } })).then(
      (answer) => window.location.assign(answer.redirect_to),
      (failure: unknown) => {
        setDeciding(false);
        setError(failure);
      },
    );
  };

  const remembered = asked.data?.remembered === true;
  const data = asked.data;
  return (
    <section aria-labelledby="consent-heading" className="consent">
      <h1 id="consent-heading">Allow access?</h1>
      <ErrorMessage error={asked.error ?? error} />
      {data === undefined && asked.error === undefined && <Loading what="the request" />}
      {data !== undefined && !remembered && (
        <>
          <p className="lead">
            <strong>{data.client.client_name}</strong>
            {data.client.host !== null && (
              <>
                {' '}
                (<span data-testid="client-host">{data.client.host}</span>)
              </>
            )}{' '}
            asks to act for you at <strong>{data.resource.name}</strong> ({data.resource.audience}) in the organization{' '}
            <strong>{data.organization.name}</strong>.
          </p>
          <p className="message message-muted" data-testid="client-registration">
            {data.client.registration === 'document' &&
              `The app chose its own name; the address it comes from is ${data.client.host ?? data.client.client_id}.`}
            {data.client.registration === 'dynamic' &&
              `The app registered itself with Gatehouse and chose its own name: nobody vouches for it. It returns to ${data.client.redirect_host}.`}
            {data.client.registration === 'organization' &&
              `Registered by the admins of ${data.organization.name} for an internal app; it returns to ${data.client.redirect_host}.`}
          </p>
          {data.scopes.length === 0 ? (
            <p>It asks for no particular permission of this resource server.</p>
          ) : (
            <ul aria-label="Permissions asked">
              {data.scopes.map((scope) => (
                <li key={scope.name}>
                  <code>{scope.name}</code>: {scope.description}
                </li>
              ))}
            </ul>
          )}
          <div className="actions">
            <button type="button" className="button button-primary" disabled={deciding} onClick={() => decide('allow')}>
              Allow
            </button>
            <button type="button" className="button" disabled={deciding} onClick={() => decide('deny')}>
              Deny
            </button>
          </div>
        </>
      )}
      {remembered && <Loading what={`your earlier consent for ${data?.client.client_name ?? 'this app'}`} />}
    </section>
  );
}
