import type { ReactNode } from 'react';
import { readableError } from '../api/errors';

/** An error, always as a sentence (never a raw body), announced to screen readers. */
export function ErrorMessage({ error }: { error: unknown }) {
  if (error === undefined || error === null) return null;
  return (
    <p role="alert" className="message message-error">
      {readableError(error)}
    </p>
  );
}

export function Loading({ what }: { what: string }) {
  return (
    <p role="status" className="message message-muted">
      Loading {what}…
    </p>
  );
}

export function Empty({ children }: { children: ReactNode }) {
  return <p className="message message-muted empty">{children}</p>;
}

export function Success({ children }: { children: ReactNode }) {
  return (
    <p role="status" className="message message-success">
      {children}
    </p>
  );
}
