/**
 * What a workload runs to exchange the token its platform gives it for a Gatehouse access token (RFC 8693 at
 * POST /oauth/token, docs/workload-identities.md#using-an-identity): a GitHub Actions workflow and a Kubernetes pod.
 * Pure, so that the page shows exactly what the documentation says.
 */

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
