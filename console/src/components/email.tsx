import { Fragment } from 'react';

/**
 * An e-mail address that wraps only between its parts, before an `@` or a `.`, never inside a word: a narrow column
 * shows `first.last` / `@example.com` on two lines rather than `first.la` / `st@exam…`.
 */
export function Email({ address, className = 'person' }: { address: string; className?: string }) {
  return (
    <span className={`${className} email`} data-testid="email">
      {address.split(/(?=[@.])/).map((part, i) => (
        <Fragment key={i}>
          {i > 0 && <wbr />}
          <span className="email-part">{part}</span>
        </Fragment>
      ))}
    </span>
  );
}
