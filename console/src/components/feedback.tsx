import type { ReactNode } from 'react';
import { readableError } from '../api/errors';
import type { Loaded } from '../hooks';

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

/**
 * How a list's load (useLoad) stands: its failure, and "Loading …" until the first answer only; a reload keeps the
 * last answer on screen instead.
 */
export function LoadStatus({ loaded, what }: { loaded: Loaded<unknown>; what: string }) {
  return (
    <>
      <ErrorMessage error={loaded.error} />
      {loaded.loading && loaded.data === undefined && <Loading what={what} />}
    </>
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
