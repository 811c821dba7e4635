/** The last four characters, never more (the API sends no more). */
export function LastFour({ value, label }: { value: string; label: string }) {
  return (
    <span className="last4">
      <span aria-hidden="true">••••</span>
      <span className="visually-hidden">{label} ending in </span>
      <code>{value}</code>
    </span>
  );
}
