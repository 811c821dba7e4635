import { useState } from 'react';

/** The checkbox of a list that hides revoked entries until asked: "Show revoked keys", `what` naming the entries. */
export function ShowRevokedToggle({
  what,
  checked,
  onChange,
}: {
  what: string;
  checked: boolean;
  onChange: (checked: boolean) => void;
}) {
  return (
    <label className="inline">
      <input type="checkbox" checked={checked} onChange={(event) => onChange(event.target.checked)} />
      {`Show revoked ${what}`}
    </label>
  );
}

/**
 * Whether a paged list shows revoked entries, and the switch for it: switching also takes the list back to its first
 * page (the page the reader was on may not exist in the other view).
 */
export function useShowRevoked(setPage: (page: number) => void): [boolean, (show: boolean) => void] {
  const [includeRevoked, setIncludeRevoked] = useState(false);
  const show = (on: boolean) => {
    setIncludeRevoked(on);
    setPage(1);
  };
  return [includeRevoked, show];
}
