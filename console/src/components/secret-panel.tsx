import { useEffect, useId, useRef, useState } from 'react';

/**
 * A new key's secret, shown once. It lives in the page's memory only (this component's props):
 * never in storage, a URL or a log. "Done" drops it for good.
 */
export function SecretPanel({
  secret,
  title,
  note,
  onDone,
}: {
  secret: string;
  title: string;
  note?: string;
  onDone: () => void;
}) {
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
        <strong>Copy it now: you will not see this again.</strong> Gatehouse keeps only a hash of the secret, so nobody
        can show it to you later. If you lose it, rotate or revoke the key.
      </p>
      {note !== undefined && <p>{note}</p>}
      <p className="secret-label" id={valueId}>
        New API key
      </p>
      <code className="secret" aria-labelledby={valueId} data-testid="new-secret">
        {secret}
      </code>
      <div className="actions">
        <button type="button" className="button button-primary" onClick={() => void copy()}>
          Copy key
        </button>
        <button type="button" className="button" onClick={onDone}>
          Done, I have stored it
        </button>
        <span role="status" className="copy-status">
          {copied === 'yes'
            ? 'Copied to the clipboard.'
            : copied === 'failed'
              ? 'Could not copy: select the key and copy it by hand.'
              : ''}
        </span>
      </div>
    </section>
  );
}
