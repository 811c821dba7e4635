import { useId, useState } from 'react';

/** A value to copy (a redirect URI): shown in full, with a copy button whose outcome is announced. */
export function CopyValue({ label, value, testId }: { label: string; value: string; testId?: string }) {
  const id = useId();
  const [copied, setCopied] = useState<'yes' | 'failed'>();
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(value);
      setCopied('yes');
    } catch {
      setCopied('failed');
    }
  };
  return (
    <div className="copy-value">
      <p className="secret-label" id={id}>
        {label}
      </p>
      <code className="secret" aria-labelledby={id} data-testid={testId}>
        {value}
      </code>
      <div className="actions">
        <button type="button" className="button button-small" onClick={() => void copy()}>
          Copy<span className="visually-hidden"> {label}</span>
        </button>
        <span role="status" className="copy-status">
          {copied === 'yes' ? 'Copied.' : copied === 'failed' ? 'Could not copy: select it and copy it by hand.' : ''}
        </span>
      </div>
    </div>
  );
}
