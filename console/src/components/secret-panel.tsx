import { useEffect, useId, useRef, useState } from 'react';

/** What the panel says of each kind of secret: a key and an invitation are kept as a hash, a webhook's signing secret sealed. */
const WORDS = {
  'api-key': {
    label: 'New API key',
    kept: 'Gatehouse keeps only a hash of the secret, so nobody can show it to you later. If you lose it, rotate or revoke the key.',
    copy: 'Copy key',
    copyFailed: 'Could not copy: select the key and copy it by hand.',
  },
  'client-secret': {
    label: 'Client secret',
    kept: 'Gatehouse keeps only a hash of the secret, so nobody can show it to you later. If you lose it, remove the app and register it again.',
    copy: 'Copy secret',
    copyFailed: 'Could not copy: select the secret and copy it by hand.',
  },
  'webhook-secret': {
    label: 'Signing secret',
    kept: 'Gatehouse keeps it encrypted, to sign events with, and never shows it again. If you lose it, rotate the secret.',
    copy: 'Copy secret',
    copyFailed: 'Could not copy: select the secret and copy it by hand.',
  },
  invitation: {
    label: 'Invitation link',
    kept: 'Gatehouse keeps only a hash of it, so nobody can show it to you later. If it is lost, invite the person again: the new link replaces this one.',
    copy: 'Copy link',
    copyFailed: 'Could not copy: select the link and copy it by hand.',
  },
} as const;

/**
 * A new secret, shown once. It lives in the page's memory only (this component's props):
 * never in storage, a URL or a log. "Done" drops it for good.
 */
export function SecretPanel({
  secret,
  kind = 'api-key',
  title,
  note,
  onDone,
}: {
  secret: string;
  kind?: keyof typeof WORDS;
  title: string;
  note?: string;
  onDone: () => void;
}) {
  const words = WORDS[kind];
  const headingId = useId();
  const valueId = useId();
  const heading = useRef<HTMLHeadingElement>(null);
  const [copied, setCopied] = useState<'yes' | 'failed' | undefined>();

  useEffect(() => heading.current?.focus(), []);

  const copy = async () => {
    try {
      await navigator.clipboard.writeText(secret);
      setCopied('yes');
    } catch {
      setCopied('failed');
    }
  };

  return (
    <section className="secret-panel" aria-labelledby={headingId}>
      <h2 id={headingId} ref={heading} tabIndex={-1}>
        {title}
      </h2>
      <p className="warning">
        <strong>Copy it now: you will not see this again.</strong> {words.kept}
      </p>
      {note !== undefined && <p>{note}</p>}
      <p className="secret-label" id={valueId}>
        {words.label}
      </p>
      <code className="secret" aria-labelledby={valueId} data-testid="new-secret">
        {secret}
      </code>
      <div className="actions">
        <button type="button" className="button button-primary" onClick={() => void copy()}>
          {words.copy}
        </button>
        <button type="button" className="button" onClick={onDone}>
          Done, I have stored it
        </button>
        <span role="status" className="copy-status">
          {copied === 'yes' ? 'Copied to the clipboard.' : copied === 'failed' ? words.copyFailed : ''}
        </span>
      </div>
    </section>
  );
}
