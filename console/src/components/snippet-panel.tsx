import { useEffect, useId, useRef, useState } from 'react';
import type { WorkloadIdentity } from '../api/workload-identities';
import {
  exchangeSnippet,
  githubActionsSnippet,
  gitlabSnippet,
  kubernetesSnippet,
  type Platform,
  platformOf,
  type SnippetInput,
} from '../workload-snippets';

/** The one snippet for the identity's platform: its title, its text and its test id. */
const SNIPPETS: Record<
  Platform,
  { title: string; testId: string; text: (input: SnippetInput & { issuer: string }) => string }
> = {
  github: { title: 'GitHub Actions workflow', testId: 'snippet-github', text: githubActionsSnippet },
  gitlab: { title: 'GitLab CI job', testId: 'snippet-gitlab', text: gitlabSnippet },
  kubernetes: { title: 'Kubernetes pod', testId: 'snippet-kubernetes', text: kubernetesSnippet },
  other: { title: 'The exchange, from any platform', testId: 'snippet-exchange', text: exchangeSnippet },
};

function Snippet({ title, text, testId }: { title: string; text: string; testId: string }) {
  const id = useId();
  const [copied, setCopied] = useState<'yes' | 'failed'>();
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(text);
      setCopied('yes');
    } catch {
      setCopied('failed');
    }
  };
  return (
    <section aria-labelledby={id}>
      <h3 id={id}>{title}</h3>
      <pre data-testid={testId}>
        <code>{text}</code>
      </pre>
      <div className="actions">
        <button type="button" className="button button-small" onClick={() => void copy()}>
          Copy<span className="visually-hidden"> {title}</span>
        </button>
        <span role="status" className="copy-status">
          {copied === 'yes' ? 'Copied.' : copied === 'failed' ? 'Could not copy: select the text by hand.' : ''}
        </span>
      </div>
    </section>
  );
}

/**
 * How a workload uses an identity: what its platform (by the identity's issuer, else its subject: platformOf) runs to
 * exchange its token at POST /oauth/token. Nothing here is secret (the identity has none), so it may be shown again.
 */
export function SnippetPanel({
  identity,
  audience,
  title,
  onDone,
}: {
  identity: WorkloadIdentity;
  /** The trusted issuer's audience; undefined when this member may not read it. */
  audience: string | undefined;
  title: string;
  onDone: () => void;
}) {
  const headingId = useId();
  const heading = useRef<HTMLHeadingElement>(null);
  useEffect(() => heading.current?.focus(), []);
  const input = {
    baseUrl: window.location.origin,
    audience: audience ?? 'AUDIENCE',
    clientId: identity.id,
    subject: identity.subject,
    issuer: identity.issuer,
  };
  const snippet = SNIPPETS[platformOf(identity.issuer, identity.subject)];

  return (
    <section className="panel" aria-labelledby={headingId}>
      <h2 id={headingId} ref={heading} tabIndex={-1}>
        {title}
      </h2>
      <p>
        A token of <code>{identity.issuer}</code> whose <code>sub</code> is <code>{identity.subject}</code>
        {Object.keys(identity.conditions).length > 0 && ' and whose claims meet every condition'} is exchanged at{' '}
        <code>POST /oauth/token</code> for an access token that acts as you, with this identity’s scopes, when the
        exchange names this identity: <code>client_id={identity.id}</code>. No secret is stored anywhere: ask the
        platform for a token with the audience <code>{input.audience}</code>.
      </p>
      <Snippet title={snippet.title} text={snippet.text(input)} testId={snippet.testId} />
      <div className="actions">
        <button type="button" className="button" onClick={onDone}>
          Done
        </button>
      </div>
    </section>
  );
}
