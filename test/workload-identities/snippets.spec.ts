import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  exchangeCommand,
  exchangeSnippet,
  githubActionsSnippet,
  gitlabSnippet,
  kubernetesSnippet,
  platformOf,
} from '../../console/src/workload-snippets';

/**
 * The snippets the console shows for a new workload identity (console/src/workload-snippets.ts): what a GitHub Actions
 * workflow, a GitLab CI job and a Kubernetes pod run to exchange their platform's token (the one of the identity's
 * platform), the exchange alone elsewhere, and the same text in docs/workload-identities.md, so the page and the
 * documentation cannot drift apart.
 */
const BASE = 'https://gatehouse.example.com';
/** The documentation's example identity and organization audience. */
const CLIENT_ID = '0191e3c4-5a6b-7c8d-9e0f-1a2b3c4d5e6f';
const AUDIENCE = 'https://gatehouse.example.com/organizations/6f1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b';
const docs = readFileSync(join(__dirname, '..', '..', 'docs', 'workload-identities.md'), 'utf8');
const fenced = (text: string): string => `\`\`\`yaml\n${text}\n\`\`\``;

describe('workload identity snippets', () => {
  it('the exchange: RFC 8693 form fields, the identity named by client_id, the token URL-encoded, at POST /oauth/token', () => {
    expect(exchangeCommand(BASE, '$TOKEN', CLIENT_ID)).toBe(
      [
        `curl -sSf -X POST ${BASE}/oauth/token \\`,
        '  -d grant_type=urn:ietf:params:oauth:grant-type:token-exchange \\',
        '  -d subject_token_type=urn:ietf:params:oauth:token-type:jwt \\',
        `  -d client_id=${CLIENT_ID} \\`,
        '  --data-urlencode "subject_token=$TOKEN"',
      ].join('\n'),
    );
  });

  it("GitHub Actions: id-token: write, the job's OIDC token for the issuer's audience, the exchange", () => {
    const snippet = githubActionsSnippet({
      baseUrl: BASE,
      audience: 'https://gatehouse.example.com/orgs?x=1&y',
      clientId: CLIENT_ID,
      subject: 'repo:acme/deploy:environment:production',
    });
    expect(snippet).toContain('  id-token: write');
    expect(snippet).toContain('-H "Authorization: Bearer $ACTIONS_ID_TOKEN_REQUEST_TOKEN"');
    expect(snippet).toContain(
      '"$ACTIONS_ID_TOKEN_REQUEST_URL&audience=https%3A%2F%2Fgatehouse.example.com%2Forgs%3Fx%3D1%26y"',
    );
    expect(snippet).toContain(`curl -sSf -X POST ${BASE}/oauth/token`);
    expect(snippet).toContain(`-d client_id=${CLIENT_ID}`);
    expect(snippet).toContain('--data-urlencode "subject_token=$OIDC_TOKEN"');
    expect(snippet).toContain('    environment: production');
    // Another subject: no environment line.
    expect(
      githubActionsSnippet({
        baseUrl: BASE,
        audience: AUDIENCE,
        clientId: CLIENT_ID,
        subject: 'repo:acme/deploy:ref:refs/heads/main',
      }),
    ).not.toContain('environment:');
  });

  it('Kubernetes: a projected service account token for the audience, at most an hour, exchanged from its file', () => {
    const snippet = kubernetesSnippet({
      baseUrl: BASE,
      audience: 'gatehouse',
      clientId: CLIENT_ID,
      subject: 'system:serviceaccount:ci:deployer',
    });
    expect(snippet).toContain('  namespace: ci');
    expect(snippet).toContain('  serviceAccountName: deployer');
    expect(snippet).toContain(
      '          - serviceAccountToken:\n              path: token\n              audience: gatehouse',
    );
    expect(snippet).toMatch(/expirationSeconds: 3600\b/);
    expect(snippet).toContain(`-d client_id=${CLIENT_ID}`);
    expect(snippet).toContain('--data-urlencode "subject_token=$(cat /var/run/secrets/gatehouse/token)"');
    // A subject of another form: placeholders to fill in.
    const other = kubernetesSnippet({
      baseUrl: BASE,
      audience: 'gatehouse',
      clientId: CLIENT_ID,
      subject: 'spiffe://acme/ns/ci',
    });
    expect(other).toContain('namespace: NAMESPACE');
    expect(other).toContain('serviceAccountName: SERVICE_ACCOUNT');
  });

  it("the platform: the issuer's when it is a known one, else the subject's usual form, else none", () => {
    const cases: Array<[string, string, string]> = [
      ['https://token.actions.githubusercontent.com', 'anything', 'github'],
      ['https://token.actions.githubusercontent.com/acme', 'repo:acme/deploy:ref:refs/heads/main', 'github'],
      ['https://token.actions.acme.ghe.com', 'system:serviceaccount:ci:deployer', 'github'],
      ['https://gitlab.com', 'project_path:acme/deploy:ref_type:branch:ref:main', 'gitlab'],
      ['https://gitlab.com', 'repo:acme/deploy:ref:refs/heads/main', 'gitlab'],
      ['https://kubernetes.default.svc.cluster.local', 'anything', 'kubernetes'],
      ['https://oidc.eks.eu-west-1.amazonaws.com/id/ABC123', 'repo:x', 'kubernetes'],
      ['https://container.googleapis.com/v1/projects/p/locations/l/clusters/c', 'x', 'kubernetes'],
      // Self-hosted: the subject's form says which.
      ['https://github.acme.test/_services/token', 'repo:acme/deploy:environment:production', 'github'],
      ['https://gitlab.acme.test', 'project_path:acme/deploy:ref_type:tag:ref:v1', 'gitlab'],
      ['https://k8s.acme.test', 'system:serviceaccount:ci:deployer', 'kubernetes'],
      ['https://idp.acme.test', 'spiffe://acme/ns/ci', 'other'],
      ['not a url', 'spiffe://acme/ns/ci', 'other'],
    ];
    expect(cases.map(([issuer, subject]) => platformOf(issuer, subject))).toEqual(
      cases.map(([, , platform]) => platform),
    );
  });

  it("GitLab CI: an id_tokens entry for the issuer's audience, exchanged in the script; a branch subject's rule", () => {
    const input = { baseUrl: BASE, audience: 'https://gatehouse.example.com/orgs?x=1', clientId: CLIENT_ID };
    const snippet = gitlabSnippet({ ...input, subject: 'project_path:acme/deploy:ref_type:branch:ref:main' });
    expect(snippet).toContain('  id_tokens:\n    GATEHOUSE_ID_TOKEN:');
    expect(snippet).toContain('      aud: https://gatehouse.example.com/orgs?x=1');
    expect(snippet).toContain('    - if: $CI_COMMIT_BRANCH == "main"');
    expect(snippet).toContain(`      ACCESS_TOKEN=$(curl -sSf -X POST ${BASE}/oauth/token \\`);
    expect(snippet).toContain(`        -d client_id=${CLIENT_ID} \\`);
    expect(snippet).toContain('--data-urlencode "subject_token=$GATEHOUSE_ID_TOKEN" | jq -r .access_token)');
    expect(gitlabSnippet({ ...input, subject: 'project_path:acme/deploy:ref_type:tag:ref:v1' })).not.toContain(
      'rules:',
    );
  });

  it('another platform: the exchange alone, naming the issuer, the audience and the subject its token must carry', () => {
    const snippet = exchangeSnippet({
      baseUrl: BASE,
      audience: 'gatehouse',
      clientId: CLIENT_ID,
      subject: 'spiffe://acme/ns/ci',
      issuer: 'https://idp.acme.test',
    });
    expect(snippet.split('\n')[0]).toBe(
      '# SUBJECT_TOKEN: a JWT of https://idp.acme.test for the audience gatehouse, whose sub is spiffe://acme/ns/ci',
    );
    expect(snippet).toContain(
      `ACCESS_TOKEN=$(${exchangeCommand(BASE, '$SUBJECT_TOKEN', CLIENT_ID)} | jq -r .access_token)`,
    );
  });

  it('docs/workload-identities.md shows exactly what the console shows', () => {
    const input = { baseUrl: BASE, audience: AUDIENCE, clientId: CLIENT_ID };
    expect(docs).toContain(
      fenced(githubActionsSnippet({ ...input, subject: 'repo:acme/deploy:environment:production' })),
    );
    expect(docs).toContain(
      fenced(gitlabSnippet({ ...input, subject: 'project_path:acme/deploy:ref_type:branch:ref:main' })),
    );
    expect(docs).toContain(fenced(kubernetesSnippet({ ...input, subject: 'system:serviceaccount:ci:deployer' })));
  });
});
