import { type FormEvent, useEffect, useEffectEvent, useId, useRef, useState } from 'react';
import { GatehouseError } from '../../../client';
import { api, unwrap } from '../api/client';
import { type Discovery, ROLES, type Role, type SingleSignOn, type TokenEndpointAuth } from '../api/members';
import { CopyValue } from '../components/copy-value';
import { ConfirmDialog } from '../components/dialog';
import { ErrorMessage, Loading, Success } from '../components/feedback';
import { formatTime } from '../format';
import { useLoad, useTitle } from '../hooks';
import type { Session } from '../session';

/** Domains or origins typed one a line (or separated by spaces or commas). */
const listed = (text: string): string[] =>
  text
    .split(/[\s,]+/)
    .map((value) => value.trim())
    .filter((value) => value !== '');

/** The origin a refused discovery named (`foreign_origin`): an endpoint's, neither the issuer's nor an allowed one. */
function foreignOriginOf(error: unknown): string | undefined {
  if (!(error instanceof GatehouseError)) return undefined;
  const origin = error.body.foreign_origin;
  return typeof origin === 'string' ? origin : undefined;
}

/** What the test of the connection found: the endpoints single sign-on will use, and the redirect URI to register. */
function DiscoveryResult({ discovery }: { discovery: Discovery }) {
  const headingId = useId();
  return (
    <section className="panel" aria-labelledby={headingId} data-testid="discovery">
      <h2 id={headingId}>The identity provider answered</h2>
      <dl className="facts">
        <dt>Discovery document</dt>
        <dd>
          <code>{discovery.document_url}</code>
        </dd>
        <dt>Sign-in page</dt>
        <dd>
          <code>{discovery.authorization_endpoint}</code>
        </dd>
        <dt>Token endpoint</dt>
        <dd>
          <code>{discovery.token_endpoint}</code>
        </dd>
        <dt>Client authentication</dt>
        <dd>{discovery.token_endpoint_auth_methods.join(', ')}</dd>
        <dt>ID token signatures</dt>
        <dd>{discovery.id_token_signing_algs?.join(', ') ?? 'not announced'}</dd>
      </dl>
      <CopyValue
        label="Redirect URI to register at the identity provider"
        value={discovery.redirect_uri}
        testId="redirect-uri"
      />
      <p className="hint">
        {discovery.iss_parameter_supported
          ? 'The provider names itself in its answers (RFC 9207), so it gets the redirect URI every such provider shares.'
          : 'The provider does not name itself in its answers, so it gets a redirect URI of this organization’s own.'}
      </p>
    </section>
  );
}

function SingleSignOnForm({ current, onSaved }: { current: SingleSignOn | null; onSaved: () => void }) {
  const ids = {
    issuer: useId(),
    issuerHint: useId(),
    clientId: useId(),
    secret: useId(),
    secretHint: useId(),
    auth: useId(),
    domains: useId(),
    domainsHint: useId(),
    jit: useId(),
    jitHint: useId(),
    origins: useId(),
    originsHint: useId(),
  };
  const [issuer, setIssuer] = useState(current?.issuer ?? '');
  const [clientId, setClientId] = useState(current?.client_id ?? '');
  const [secret, setSecret] = useState('');
  const [auth, setAuth] = useState<TokenEndpointAuth>(current?.token_endpoint_auth ?? 'client_secret_basic');
  const [domains, setDomains] = useState(current?.email_domains.join('\n') ?? '');
  const [jitRole, setJitRole] = useState<Role | ''>(current?.jit_role ?? '');
  const [origins, setOrigins] = useState(current?.allowed_origins.join('\n') ?? '');
  const [discovery, setDiscovery] = useState<Discovery>();
  const [testing, setTesting] = useState(false);
  const [testError, setTestError] = useState<unknown>();
  const [saving, setSaving] = useState(false);
  const [saveError, setSaveError] = useState<unknown>();
  const [saved, setSaved] = useState<string>();
  const loaded = useRef(current);

  /** Tests with the origins as typed, or as `withOrigins` when one was just added (the state is not updated yet). */
  const test = async (withOrigins = origins) => {
    setTesting(true);
    setTestError(undefined);
    setDiscovery(undefined);
    try {
      const answer = await unwrap(
        api.POST('/v1/organization/single-sign-on/test', {
          body: { issuer: issuer.trim(), token_endpoint_auth: auth, allowed_origins: listed(withOrigins) },
        }),
      );
      setDiscovery(answer.discovery);
    } catch (failure) {
      setTestError(failure);
    } finally {
      setTesting(false);
    }
  };

  // Set up already: the provider is asked once, when the page opens, so it shows the redirect URI it wants now.
  const testLoaded = useEffectEvent(() => void test());
  useEffect(() => {
    if (loaded.current !== null) testLoaded();
  }, []);

  // A refusal that names an origin (Google's key set is on another): allowed with one click, then tested again.
  const refusedOrigin = foreignOriginOf(testError);
  const allow = (origin: string) => {
    const next = [...listed(origins), origin].join('\n');
    setOrigins(next);
    void test(next);
  };

  const save = async (event: FormEvent) => {
    event.preventDefault();
    setSaving(true);
    setSaveError(undefined);
    setSaved(undefined);
    try {
      const answer = await unwrap(
        api.PUT('/v1/organization/single-sign-on', {
          body: {
            issuer: issuer.trim(),
            client_id: clientId.trim(),
            ...(secret === '' ? {} : { client_secret: secret }),
            token_endpoint_auth: auth,
            email_domains: listed(domains),
            ...(jitRole === '' ? {} : { jit_role: jitRole }),
            allowed_origins: listed(origins),
          },
        }),
      );
      setSecret('');
      setOrigins(answer.single_sign_on.allowed_origins.join('\n'));
      setSaved(answer.redirect_uri);
      onSaved();
    } catch (failure) {
      setSaveError(failure);
    } finally {
      setSaving(false);
    }
  };

  return (
    <>
      <form className="panel" onSubmit={(event) => void save(event)} aria-label="Single sign-on">
        <div className="field">
          <label htmlFor={ids.issuer}>Issuer URL</label>
          <input
            id={ids.issuer}
            type="url"
            required
            maxLength={255}
            autoComplete="off"
            spellCheck={false}
            placeholder="https://login.example.com"
            value={issuer}
            aria-describedby={ids.issuerHint}
            onChange={(event) => setIssuer(event.target.value)}
          />
          <p className="hint" id={ids.issuerHint}>
            As the provider’s discovery document names it (Okta: <code>https://acme.okta.com</code>; Entra ID:{' '}
            <code>https://login.microsoftonline.com/TENANT/v2.0</code>). Test it first: the answer says which redirect
            URI to register there.
          </p>
        </div>
        <div className="field">
          <label htmlFor={ids.origins}>Other allowed origins</label>
          <textarea
            id={ids.origins}
            rows={2}
            spellCheck={false}
            value={origins}
            aria-describedby={ids.originsHint}
            placeholder="https://www.googleapis.com"
            onChange={(event) => setOrigins(event.target.value)}
          />
          <p className="hint" id={ids.originsHint}>
            Only for a provider whose key set or endpoints are on another origin than the issuer’s (Google:{' '}
            <code>https://www.googleapis.com</code> and <code>https://oauth2.googleapis.com</code>). One a line, scheme
            and host only, at most 10; the test names any that is missing.
          </p>
        </div>
        <div className="actions">
          <button
            type="button"
            className="button"
            disabled={testing || issuer.trim() === ''}
            onClick={() => void test()}
          >
            {testing ? 'Testing…' : 'Test the connection'}
          </button>
        </div>
        <ErrorMessage error={testError} />
        {refusedOrigin !== undefined && !testing && (
          <div className="actions">
            <button type="button" className="button" onClick={() => allow(refusedOrigin)}>
              Allow {refusedOrigin} and test again
            </button>
          </div>
        )}
        {discovery !== undefined && <DiscoveryResult discovery={discovery} />}
        <div className="field">
          <label htmlFor={ids.clientId}>Client ID</label>
          <input
            id={ids.clientId}
            required
            maxLength={255}
            autoComplete="off"
            spellCheck={false}
            value={clientId}
            onChange={(event) => setClientId(event.target.value)}
          />
        </div>
        <div className="field">
          <label htmlFor={ids.secret}>Client secret</label>
          <input
            id={ids.secret}
            type="password"
            required={current === null}
            maxLength={1024}
            autoComplete="new-password"
            spellCheck={false}
            value={secret}
            aria-describedby={ids.secretHint}
            onChange={(event) => setSecret(event.target.value)}
          />
          <p className="hint" id={ids.secretHint}>
            {current === null
              ? 'Stored encrypted and never shown again.'
              : 'Stored encrypted and never shown. Leave it empty to keep the stored one.'}
          </p>
        </div>
        <div className="field">
          <label htmlFor={ids.auth}>Client authentication at the token endpoint</label>
          <select id={ids.auth} value={auth} onChange={(event) => setAuth(event.target.value as TokenEndpointAuth)}>
            <option value="client_secret_basic">client_secret_basic (HTTP Basic)</option>
            <option value="client_secret_post">client_secret_post (in the form)</option>
          </select>
        </div>
        <div className="field">
          <label htmlFor={ids.domains}>E-mail domains</label>
          <textarea
            id={ids.domains}
            rows={3}
            spellCheck={false}
            value={domains}
            aria-describedby={ids.domainsHint}
            onChange={(event) => setDomains(event.target.value)}
          />
          <p className="hint" id={ids.domainsHint}>
            One a line, e.g. <code>acme.com</code>. Only people whose verified address is in one of them may sign in;
            none: any address the provider vouches for.
          </p>
        </div>
        <div className="field">
          <label htmlFor={ids.jit}>People who are not members yet</label>
          <select
            id={ids.jit}
            value={jitRole}
            aria-describedby={ids.jitHint}
            onChange={(event) => setJitRole(event.target.value as Role | '')}
          >
            <option value="">Get no access (an admin invites them)</option>
            {ROLES.map((role) => (
              <option key={role.name} value={role.name}>
                Join as {role.name}
              </option>
            ))}
          </select>
          <p className="hint" id={ids.jitHint}>
            Joining at the first sign-in needs e-mail domains, and never brings back someone an admin removed.
          </p>
        </div>
        <ErrorMessage error={saveError} />
        {saved !== undefined && (
          <>
            <Success>Single sign-on saved. Members sign in with the organization’s name on the sign-in page.</Success>
            <CopyValue
              label="Redirect URI to register at the identity provider"
              value={saved}
              testId="saved-redirect-uri"
            />
          </>
        )}
        <div className="actions">
          <button type="submit" className="button button-primary" disabled={saving}>
            {saving ? 'Saving…' : 'Save single sign-on'}
          </button>
        </div>
      </form>
    </>
  );
}

/**
 * The organization's single sign-on (organization:write): its identity provider for people, tested before it is saved,
 * the redirect URI to register there shown with a copy button, the client secret typed and never shown back.
 */
export function SingleSignOnPage({ session }: { session: Session }) {
  useTitle('Single sign-on');
  const setting = useLoad(async () => (await unwrap(api.GET('/v1/organization/single-sign-on'))).single_sign_on, 'sso');
  const [removing, setRemoving] = useState(false);
  const [done, setDone] = useState<string>();
  const current = setting.data;

  return (
    <>
      <div className="page-heading">
        <h1>Single sign-on</h1>
        {current !== undefined && current !== null && (
          <button type="button" className="button button-danger" onClick={() => setRemoving(true)}>
            Turn off single sign-on
          </button>
        )}
      </div>
      <p className="lead">
        {current === undefined
          ? `How the people of ${session.organization.name} sign in with your company’s identity provider.`
          : current === null
            ? `${session.organization.name} has no single sign-on: members sign in with one-time links.`
            : `Members of ${session.organization.name} sign in through ${current.issuer} (since ${formatTime(current.created_at)}).`}
      </p>
      {done !== undefined && <Success>{done}</Success>}
      {current === undefined && <ErrorMessage error={setting.error} />}
      {setting.loading && current === undefined && <Loading what="the single sign-on setting" />}
      {current !== undefined && (
        <>
          <p>
            Register Gatehouse at the provider as a web application (authorization code with PKCE), scopes{' '}
            <code>openid email profile</code>, with the redirect URI the test below names.
          </p>
          <SingleSignOnForm current={current} onSaved={setting.reload} />
        </>
      )}
      {removing && current !== undefined && current !== null && (
        <ConfirmDialog
          title="Turn off single sign-on?"
          confirmLabel="Turn off"
          danger
          onClose={() => setRemoving(false)}
          onConfirm={async () => {
            await unwrap(api.DELETE('/v1/organization/single-sign-on'));
            setDone(`Single sign-on through ${current.issuer} is off.`);
            setting.reload();
          }}
        >
          <p>
            Nobody can sign in through {current.issuer} any more; sessions it gave end within the hour. The client
            secret is deleted.
          </p>
        </ConfirmDialog>
      )}
    </>
  );
}
