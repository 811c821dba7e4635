/**
 * What a workload runs to exchange the token its platform gives it for a Gatehouse access token (RFC 8693 at
 * POST /oauth/token, docs/workload-identities.md#using-an-identity): a GitHub Actions workflow, a GitLab CI job, a
 * Kubernetes pod, or the exchange alone for another platform; one snippet, for the identity's platform (platformOf).
 * Pure, so that the page shows exactly what the documentation says.
 */

export type Platform = 'github' | 'gitlab' | 'kubernetes' | 'other';

/** The issuers of the hosted platforms, by their exact URL or host (a managed cluster's issuer has one per cluster). */
function platformOfIssuer(issuer: string): Platform | undefined {
  let url: URL;
  try {
    url = new URL(issuer);
  } catch {
    return undefined;
  }
  const host = url.hostname;
  if (host === 'token.actions.githubusercontent.com' || /^token\.actions\.[^.]+\.ghe\.com$/.test(host)) return 'github';
  if (host === 'gitlab.com') return 'gitlab';
  if (
    host === 'kubernetes.default.svc' ||
    host.startsWith('kubernetes.default.svc.') ||
    /^oidc\.eks\.[a-z0-9-]+\.amazonaws\.com$/.test(host) ||
    host === 'container.googleapis.com' ||
    host.endsWith('.oic.prod-aks.azure.com')
  ) {
    return 'kubernetes';
  }
  return undefined;
}

/**
 * The platform an identity's tokens come from: its issuer's when it is a known one; else what the subject's usual form
 * says (GitHub Enterprise Server, a self-managed GitLab, any cluster); else `other`.
 */
export function platformOf(issuer: string, subject: string): Platform {
  const known = platformOfIssuer(issuer);
  if (known !== undefined) return known;
  if (subject.startsWith('repo:')) return 'github';
  if (subject.startsWith('project_path:')) return 'gitlab';
  if (subject.startsWith('system:serviceaccount:')) return 'kubernetes';
  return 'other';
}

export interface SnippetInput {
  /** Where Gatehouse answers, e.g. https://gatehouse.example.com (the console's own origin). */
  baseUrl: string;
  /** The audience the platform's token must carry: the trusted issuer's (by default, the organization's own). */
  audience: string;
  /** The identity's id: the exchange names it as `client_id`, so that no other identity is considered. */
  clientId: string;
  /** The identity's subject: the workflow's or the service account's name is read from it when it has the usual form. */
  subject: string;
}

const EXCHANGE_FIELDS = [
  '-d grant_type=urn:ietf:params:oauth:grant-type:token-exchange',
  '-d subject_token_type=urn:ietf:params:oauth:token-type:jwt',
];

/**
 * The curl command that exchanges `$tokenExpression` (a shell expression) for an access token through the identity
 * `clientId`.
 */
export function exchangeCommand(baseUrl: string, tokenExpression: string, clientId: string, indent = ''): string {
  return [
    `curl -sSf -X POST ${baseUrl}/oauth/token \\`,
    ...EXCHANGE_FIELDS.map((field) => `${indent}  ${field} \\`),
    `${indent}  -d client_id=${clientId} \\`,
    `${indent}  --data-urlencode "subject_token=${tokenExpression}"`,
  ].join('\n');
}

/** GitHub Actions: `id-token: write`, the job's OIDC token for the audience, exchanged in a step. */
export function githubActionsSnippet({ baseUrl, audience, clientId, subject }: SnippetInput): string {
  const environment = /^repo:[^:]+:environment:(.+)$/.exec(subject)?.[1];
  const step = '          ';
  return [
    'permissions:',
    '  id-token: write # lets the job ask GitHub for its OIDC token',
    '  contents: read',
    '',
    'jobs:',
    '  deploy:',
    '    runs-on: ubuntu-latest',
    ...(environment === undefined ? [] : [`    environment: ${environment}`]),
    '    steps:',
    '      - name: Get a Gatehouse access token',
    '        run: |',
    `${step}OIDC_TOKEN=$(curl -sSf -H "Authorization: Bearer $ACTIONS_ID_TOKEN_REQUEST_TOKEN" \\`,
    `${step}  "$ACTIONS_ID_TOKEN_REQUEST_URL&audience=${encodeURIComponent(audience)}" | jq -r .value)`,
    `${step}ACCESS_TOKEN=$(${exchangeCommand(baseUrl, '$OIDC_TOKEN', clientId, step)} | jq -r .access_token)`,
    `${step}echo "::add-mask::$ACCESS_TOKEN"`,
    `${step}echo "GATEHOUSE_TOKEN=$ACCESS_TOKEN" >> "$GITHUB_ENV"`,
    '      - name: Call the API',
    `        run: curl -sSf -H "Authorization: Bearer $GATEHOUSE_TOKEN" ${baseUrl}/v1/organization`,
  ].join('\n');
}

/** Kubernetes: a projected service account token for the audience, read from its file and exchanged. */
export function kubernetesSnippet({ baseUrl, audience, clientId, subject }: SnippetInput): string {
  const account = /^system:serviceaccount:([^:]+):([^:]+)$/.exec(subject);
  const namespace = account?.[1] ?? 'NAMESPACE';
  const name = account?.[2] ?? 'SERVICE_ACCOUNT';
  const path = '/var/run/secrets/gatehouse';
  return [
    'apiVersion: v1',
    'kind: Pod',
    'metadata:',
    `  name: ${name}`,
    `  namespace: ${namespace}`,
    'spec:',
    `  serviceAccountName: ${name}`,
    '  containers:',
    '    - name: app',
    '      image: IMAGE',
    '      volumeMounts:',
    '        - name: gatehouse-token',
    `          mountPath: ${path}`,
    '          readOnly: true',
    '  volumes:',
    '    - name: gatehouse-token',
    '      projected:',
    '        sources:',
    '          - serviceAccountToken:',
    '              path: token',
    `              audience: ${audience}`,
    '              expirationSeconds: 3600 # Gatehouse takes tokens that live at most an hour',
    '',
    '# In the container, whenever it needs an access token (the kubelet renews the file):',
    `# ${exchangeCommand(baseUrl, `$(cat ${path}/token)`, clientId).replaceAll('\n', '\n# ')}`,
  ].join('\n');
}

/** GitLab CI: an ID token for the audience (`id_tokens`), exchanged in the job's script. */
export function gitlabSnippet({ baseUrl, audience, clientId, subject }: SnippetInput): string {
  const branch = /^project_path:[^:]+:ref_type:branch:ref:(.+)$/.exec(subject)?.[1];
  const script = '      ';
  return [
    'deploy:',
    ...(branch === undefined ? [] : ['  rules:', `    - if: $CI_COMMIT_BRANCH == "${branch}"`]),
    '  id_tokens:',
    '    GATEHOUSE_ID_TOKEN: # signed by GitLab for this audience',
    `      aud: ${audience}`,
    '  script:',
    '    - |',
    `${script}ACCESS_TOKEN=$(${exchangeCommand(baseUrl, '$GATEHOUSE_ID_TOKEN', clientId, script)} | jq -r .access_token)`,
    `${script}curl -sSf -H "Authorization: Bearer $ACCESS_TOKEN" ${baseUrl}/v1/organization`,
  ].join('\n');
}

/** Any other platform: the exchange alone, for a token of the issuer, with the audience, whose `sub` is the subject. */
export function exchangeSnippet({
  baseUrl,
  audience,
  clientId,
  subject,
  issuer,
}: SnippetInput & { issuer: string }): string {
  return [
    `# SUBJECT_TOKEN: a JWT of ${issuer} for the audience ${audience}, whose sub is ${subject}`,
    `ACCESS_TOKEN=$(${exchangeCommand(baseUrl, '$SUBJECT_TOKEN', clientId)} | jq -r .access_token)`,
  ].join('\n');
}
