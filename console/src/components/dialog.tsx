import { type ReactNode, useEffect, useId, useRef, useState } from 'react';
import { ErrorMessage } from './feedback';

/**
 * A modal dialog (the native <dialog>: focus moves into it, Escape closes it, the page behind is
 * inert). `onConfirm` may fail: the error is shown in the dialog, which stays open.
 */
export function ConfirmDialog(props: {
  title: string;
  children: ReactNode;
  confirmLabel: string;
  danger?: boolean;
  onConfirm: () => Promise<void>;
  onClose: () => void;
}) {
  const ref = useRef<HTMLDialogElement>(null);
  const titleId = useId();
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>();
  const { onClose } = props;

  useEffect(() => {
    const dialog = ref.current;
    if (dialog !== null && !dialog.open) dialog.showModal();
    return () => dialog?.close();
  }, []);

  const confirm = async () => {
    setBusy(true);
    setError(undefined);
    try {
      await props.onConfirm();
      onClose();
    } catch (failure) {
      setError(failure);
      setBusy(false);
    }
  };

  return (
    <dialog
      ref={ref}
      aria-labelledby={titleId}
      onCancel={(event) => {
        event.preventDefault();
        if (!busy) onClose();
      }}
    >
      <h2 id={titleId}>{props.title}</h2>
      <div className="dialog-body">{props.children}</div>
      <ErrorMessage error={error} />
      <div className="actions">
        <button type="button" className="button" onClick={onClose} disabled={busy}>
          Cancel
        </button>
        <button
          type="button"
          className={props.danger ? 'button button-danger' : 'button button-primary'}
          onClick={() => void confirm()}
          disabled={busy}
        >
          {busy ? 'Working…' : props.confirmLabel}
        </button>
      </div>
    </dialog>
  );
}
