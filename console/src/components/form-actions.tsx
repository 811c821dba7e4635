/** A form's buttons: submit (its label, and what it says while the request runs) and Cancel, both off meanwhile. */
export function FormActions({
  label,
  busyLabel,
  busy,
  disabled = false,
  onCancel,
}: {
  label: string;
  busyLabel: string;
  busy: boolean;
  /** Submitting is not possible yet (a required choice missing). */
  disabled?: boolean;
  onCancel: () => void;
}) {
  return (
    <div className="actions">
      <button type="submit" className="button button-primary" disabled={busy || disabled}>
        {busy ? busyLabel : label}
      </button>
      <button type="button" className="button" onClick={onCancel} disabled={busy}>
        Cancel
      </button>
    </div>
  );
}
