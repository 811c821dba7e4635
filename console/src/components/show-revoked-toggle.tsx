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
