import { type ReactNode, useEffect, useRef } from 'react';
import { api } from './api/client';
import type { Permission } from './api/contract';
import { AuditLogPage } from './pages/audit-log';
import { Email } from './components/email';
import { ConnectedAppsPage } from './pages/connected-apps';
import { afterSignIn, ConsentPage, rememberConsentRequest } from './pages/consent';
import { IntegrationFormPage } from './pages/integration-form';
import { IntegrationsPage } from './pages/integrations';
import { KeyPage } from './pages/key-usage';
import { MembersPage } from './pages/members';
import { MyKeysPage } from './pages/my-keys';
import { NotFoundPage } from './pages/not-found';
import { OAuthAppsPage } from './pages/oauth-apps';
import { OrganizationKeysPage } from './pages/organization-keys';
import { OrganizationUsagePage } from './pages/organization-usage';
import { SettingsPage } from './pages/settings';
import { SignInPage } from './pages/sign-in';
import { SingleSignOnPage } from './pages/single-sign-on';
import { WebhooksPage } from './pages/webhooks';
import { WorkloadIdentitiesPage } from './pages/workload-identities';
import { WorkloadIdentityPage } from './pages/workload-identity-usage';
import { Link, navigate, usePath } from './router';
import { can, endSession, type Session, useSession } from './session';

interface Section {
  path: string;
  label: string;
  /** Shown, and reachable, only with this permission: what a role may not do is not offered. */
  permission: Permission;
}

const SECTIONS: Section[] = [
  { path: '/keys', label: 'My keys', permission: 'api_keys:read' },
  { path: '/workload-identities', label: 'Workload identities', permission: 'workload_identities:read' },
  { path: '/apps', label: 'Connected apps', permission: 'api_keys:read' },
  { path: '/organization/keys', label: 'Organization keys', permission: 'api_keys:manage' },
  { path: '/organization/usage', label: 'Usage', permission: 'api_keys:manage' },
  { path: '/organization/members', label: 'Members', permission: 'members:read' },
  { path: '/organization/webhooks', label: 'Webhooks', permission: 'webhooks:read' },
  { path: '/organization/oauth-apps', label: 'OAuth apps', permission: 'organization:write' },
  { path: '/audit', label: 'Audit log', permission: 'audit:read' },
  { path: '/integrations', label: 'Integrations', permission: 'integrations:read' },
  { path: '/settings', label: 'Settings', permission: 'organization:write' },
  { path: '/organization/single-sign-on', label: 'Single sign-on', permission: 'organization:write' },
];

const UUID = '[0-9a-fA-F-]{36}';

function page(path: string, session: Session): ReactNode {
  const allowed = (permission: Permission) => can(session, permission);
  if (path === '/keys' && allowed('api_keys:read')) return <MyKeysPage session={session} />;
  if (path === '/workload-identities' && allowed('workload_identities:read'))
    return <WorkloadIdentitiesPage session={session} />;
  const key = new RegExp(`^/keys/(${UUID})$`).exec(path);
  if (key !== null && allowed('api_keys:read')) return <KeyPage key={key[1]} id={key[1]} />;
  const identity = new RegExp(`^/workload-identities/(${UUID})$`).exec(path);
  if (identity !== null && allowed('workload_identities:read')) {
    return <WorkloadIdentityPage key={identity[1]} id={identity[1]} />;
  }
  if (path === '/organization/usage' && allowed('api_keys:manage') && allowed('workload_identities:manage')) {
    return <OrganizationUsagePage session={session} />;
  }
  if (path === '/apps' && allowed('api_keys:read')) return <ConnectedAppsPage />;
  if (path === '/consent') return <ConsentPage />;
  if (path === '/organization/keys' && allowed('api_keys:manage')) return <OrganizationKeysPage session={session} />;
  const organizationKey = new RegExp(`^/organization/keys/(${UUID})$`).exec(path);
  if (organizationKey !== null && allowed('api_keys:manage')) {
    return <KeyPage key={`organization/${organizationKey[1]}`} id={organizationKey[1]} organization />;
  }
  if (path === '/organization/members' && allowed('members:read')) return <MembersPage session={session} />;
  if (path === '/organization/single-sign-on' && allowed('organization:write'))
    return <SingleSignOnPage session={session} />;
  if (path === '/organization/webhooks' && allowed('webhooks:read')) return <WebhooksPage session={session} />;
  if (path === '/organization/oauth-apps' && allowed('organization:write')) return <OAuthAppsPage session={session} />;
  if (path === '/audit' && allowed('audit:read')) return <AuditLogPage />;
  if (path === '/settings' && allowed('organization:write')) return <SettingsPage />;
  if (path === '/integrations' && allowed('integrations:read')) return <IntegrationsPage session={session} />;
  if (path === '/integrations/new' && allowed('integrations:write')) return <IntegrationFormPage />;
  const edit = new RegExp(`^/integrations/(${UUID})$`).exec(path);
  if (edit !== null && allowed('integrations:write')) return <IntegrationFormPage key={edit[1]} id={edit[1]} />;
  return <NotFoundPage />;
}

/**
 * Back to the sign-in page. When the server ended the sessions (`organization` given), the page says what else ended:
 * signing out ends every session token of the member there, the command line's too (docs/console.md#signing-in).
 */
function signedOut(organization: string | undefined): void {
  endSession(
    organization === undefined
      ? 'You are signed out.'
      : `You are signed out. Every session of yours in ${organization} has ended with this one: your other tabs, and the session tokens the admin command line printed for you (gatehouse bootstrap, gatehouse session).`,
  );
  navigate('/sign-in', { replace: true });
}

function Layout({ session, path, children }: { session: Session; path: string; children: ReactNode }) {
  const main = useRef<HTMLElement>(null);
  // A new page: focus moves to it, so a screen reader starts there and Tab continues from it.
  useEffect(() => {
    if (document.activeElement === document.body || document.activeElement === null) return;
    main.current?.focus();
  }, [path]);

  return (
    <>
      <a className="skip-link" href="#main">
        Skip to content
      </a>
      <header className="site-header">
        <div className="brand">
          <span className="brand-name">Gatehouse</span>
          <span className="brand-org">
            {session.organization.name} · <span className="role">{session.role}</span>
          </span>
        </div>
        <nav aria-label="Console">
          <ul>
            {SECTIONS.filter((section) => can(session, section.permission)).map((section) => (
              <li key={section.path}>
                <Link
                  to={section.path}
                  aria-current={path === section.path || path.startsWith(`${section.path}/`) ? 'page' : undefined}
                >
                  {section.label}
                </Link>
              </li>
            ))}
          </ul>
        </nav>
        <div className="account">
          <p className="signed-in-as" data-testid="signed-in-as">
            Signed in as{' '}
            <strong>
              <Email address={session.email} className="signed-in-email" />
            </strong>
          </p>
          <button
            type="button"
            className="button sign-out"
            onClick={() => {
              // The server ends the session tokens first; the tab forgets its own whatever the answer.
              void api.DELETE('/v1/console/sessions/current').then(
                ({ response }) => signedOut(response.ok ? session.organization.name : undefined),
                () => signedOut(undefined),
              );
            }}
          >
            Sign out
          </button>
        </div>
      </header>
      <main id="main" ref={main} tabIndex={-1}>
        {children}
      </main>
    </>
  );
}

/** The console: the sign-in page, or the signed-in member's pages. */
export function App() {
  const path = usePath();
  const session = useSession();

  useEffect(() => {
    // An app's consent page met before signing in: the sign-in comes back to it.
    if (path === '/consent') rememberConsentRequest();
    if (session === undefined && path !== '/sign-in') navigate('/sign-in', { replace: true });
    else if (session !== undefined && (path === '/' || path === '/sign-in') && window.location.hash === '') {
      navigate(afterSignIn(), { replace: true });
    }
  }, [session, path]);

  if (path === '/sign-in' || session === undefined) return <SignInPage />;
  return (
    <Layout session={session} path={path}>
      {page(path, session)}
    </Layout>
  );
}
