// Import rules for src/, checked by `npm run lint` (`depcruise src`). Why these arrows:
// docs/adr/0012-bearer-guard-without-passport.md, section "Dependency rules". An ES module (.mjs)
// like eslint.config.mjs, which leaves it out of the type-aware lint.

/** Feature modules (folders under src/) and the feature modules each may import. */
export const MAY_USE = {
  identity: [],
  // The audit log API's controller uses identity's access vocabulary (docs/adr/0018-audit-event-pages.md).
  audit: ['identity'],
  // Counters the other modules call into (docs/adr/0023-prometheus-metrics.md); it reads no feature module.
  metrics: [],
  // The credential core: what every kind of credential shares (docs/adr/0052-one-credential-core.md).
  credentials: ['identity', 'audit'],
  'api-keys': ['identity', 'audit', 'metrics', 'credentials'],
  integrations: ['identity', 'audit', 'metrics'],
  // The settings API and CLI change identity's organizations row and record it in the audit trail.
  'organization-settings': ['identity', 'audit'],
  // The registry of resource servers: the operator's CLI writes it, auth and oauth read it; its guard authenticates a
  // resource server's client credentials and hands it over with identity's access vocabulary.
  'resource-servers': ['identity'],
  // Federation's verified subject tokens and workload identities become tokens here (the RFC 8693 exchange).
  auth: [
    'api-keys',
    'credentials',
    'identity',
    'audit',
    'metrics',
    'resource-servers',
    'federation',
    'workload-identities',
  ],
  // The standard protocols over auth: RFC 8414 metadata, client credentials, introspection, forward auth.
  oauth: ['auth', 'api-keys', 'identity', 'resource-servers', 'federation', 'grants', 'audit', 'metrics'],
  // The revocation feed: audit entries become CAEP events (audit's observer), delivered to resource servers, signed
  // with auth's key.
  ssf: ['audit', 'auth', 'identity', 'resource-servers'],
  // The admin command line's commands and argument parsing (src/cli.ts is its entry point): it uses
  // the services of the modules it administers (api-keys: a member's removal revokes their keys);
  // no module uses it.
  cli: [
    'identity',
    'api-keys',
    'auth',
    'organization-settings',
    'console-sign-in',
    'resource-servers',
    'federation',
    'members',
    'oauth',
  ],
  // The console's sign-in links mint session tokens (auth) for members (identity); refusals are counted (metrics). Its
  // single sign-on (sso/) signs people in through their organization's people issuer (federation's trusted issuers,
  // discovery and ID token verification; docs/adr/0039-console-single-sign-on.md); an invitation's link makes the person
  // a member through members' lifecycle, then signs them in (docs/adr/0057-members-and-single-sign-on-in-the-console.md).
  'console-sign-in': ['auth', 'identity', 'audit', 'metrics', 'federation', 'members'],
  // One member lifecycle (add, change role, remove; a removal remembered): identity's memberships, audited, and a
  // removal revokes the member's credentials of every kind through the credential core
  // (docs/adr/0044-one-member-lifecycle.md).
  members: ['identity', 'audit', 'credentials'],
  // Grants of the authorization code flow (docs/mcp.md#grants): a person's consents (identity's memberships, audited),
  // their codes and refresh tokens; a kind of credential (the credential core, through which auth reads whether a grant
  // is live and a member's removal revokes it); oauth issues its codes and tokens.
  grants: ['identity', 'audit', 'credentials'],
  // Federation: the identity providers an organization trusts (identity's organizations, audited), their client
  // secrets sealed with integrations' credential cipher (docs/adr/0036-federation.md); people become members through
  // members' lifecycle (just in time, never someone removed).
  federation: ['identity', 'audit', 'integrations', 'members'],
  // Health needs @Public() from identity's access vocabulary, and auth's signing keys for readiness.
  health: ['identity', 'auth'],
  // Signed webhooks: audit entries become deliveries (audit's observer); api-keys publishes the keys near expiry;
  // endpoint secrets are sealed with integrations' credential cipher; dropped deliveries, disabled endpoints and the
  // test deliveries' 429s are counted (metrics).
  webhooks: ['audit', 'api-keys', 'identity', 'integrations', 'metrics'],
  // Workload identities (keys without secrets): members' credentials (identity, audited) naming an organization's
  // trusted issuer (federation); a kind of credential (the credential core: docs/adr/0052-one-credential-core.md).
  'workload-identities': ['identity', 'audit', 'federation', 'credentials'],
};
const FEATURES = Object.keys(MAY_USE);

// The table must stay a one-way graph: an edit that lets two modules reach each other fails here.
function reaches(from, to, seen = new Set()) {
  for (const next of MAY_USE[from]) {
    if (next === to) return true;
    if (seen.has(next)) continue;
    seen.add(next);
    if (reaches(next, to, seen)) return true;
  }
  return false;
}
for (const name of FEATURES) if (reaches(name, name)) throw new Error(`MAY_USE has a cycle through ${name}`);
const anyOf = (names) => `^src/(${names.join('|')})/`;

/** @type {import('dependency-cruiser').IConfiguration} */
export default {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'A file-level import cycle (type-only imports included): split or move the shared piece.',
      from: { path: '^src/' },
      to: { circular: true },
    },
    ...FEATURES.map((name) => ({
      name: `arrows-from-${name}`,
      severity: 'error',
      comment: `Dependencies point one way (auth -> api-keys -> identity; integrations, organization-settings -> identity; api-keys, auth, integrations and organization-settings -> audit -> identity; api-keys, auth and integrations -> metrics): ${name}/ may import ${MAY_USE[name].join(', ') || 'no other feature module'}.`,
      from: { path: `^src/${name}/` },
      to: { path: anyOf(FEATURES.filter((other) => other !== name && !MAY_USE[name].includes(other))) },
    })),
    {
      name: 'foundations-import-no-feature',
      severity: 'error',
      comment: 'common/ and config/ are used by everything, so they import no feature module and no database code.',
      from: { path: '^src/(common|config)/' },
      to: { path: [anyOf([...FEATURES, 'database']), '^src/[^/]+\\.ts$'] },
    },
    {
      name: 'database-imports-no-feature',
      severity: 'error',
      comment:
        'database/ is used by every module, so it imports none: each feature module registers its own entities (EntitiesModule).',
      from: { path: '^src/database/' },
      to: { path: anyOf(FEATURES) },
    },
    {
      name: 'unlisted-module',
      severity: 'error',
      comment:
        'A new folder under src/ gets its arrows in MAY_USE (or is a foundation like common/) before it is used.',
      from: { path: '^src/' },
      to: { path: '^src/[^/]+/', pathNot: anyOf([...FEATURES, 'common', 'config', 'database']) },
    },
    {
      name: 'no-import-of-entry-points',
      severity: 'error',
      comment: 'main.ts, cli.ts and app.module.ts assemble the modules; no module imports them.',
      from: { path: '^src/[^/]+/' },
      to: { path: '^src/[^/]+\\.ts$' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    // Type-only imports count: they tie files together for a reader as much as runtime ones.
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
  },
};
