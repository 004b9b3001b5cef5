// Delete a session, after a confirmation that names it and says it cannot be undone.
// The dialog is keyboard-first: focus starts on Cancel (the safe answer), Tab stays inside,
// Esc cancels. After the delete the change feed (`session_deleted`) updates the list and
// takes a window that shows the session to the new-session screen (useLeaveDeleted).
import { useEffect, useRef, useState } from "preact/hooks";
import { deleteSession, errorKind, errorMessage } from "../../api/commands";
import type { Session } from "../../api/generated/bindings";
import { modalKeyDown } from "../../lib/dialogKeys";
import { visible } from "../approvals/hidden";

interface Props {
  session: Session;
}

export function DeleteSession({ session }: Props) {
  const [open, setOpen] = useState(false);
  const opener = useRef<HTMLButtonElement>(null);
  return (
    <>
      <button
        type="button"
        class="link rename delete-session"
        ref={opener}
        data-testid="delete-session"
        aria-label="Delete this session"
        aria-haspopup="dialog"
        onClick={() => setOpen(true)}
      >
        Delete
      </button>
      {open && (
        <ConfirmDelete
          session={session}
          onClose={() => {
            setOpen(false);
            opener.current?.focus();
          }}
        />
      )}
    </>
  );
}

export function ConfirmDelete({ session, onClose }: { session: Session; onClose: () => void }) {
  const dialog = useRef<HTMLDivElement>(null);
  const cancel = useRef<HTMLButtonElement>(null);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<{ text: string; kind: string | null } | null>(null);
  useEffect(() => {
    cancel.current?.focus();
    // Focus that lands behind the dialog comes back to it.
    const onFocus = (e: FocusEvent) => {
      const root = dialog.current;
      if (root && e.target instanceof Node && !root.contains(e.target)) cancel.current?.focus();
    };
    document.addEventListener("focusin", onFocus);
    return () => document.removeEventListener("focusin", onFocus);
  }, []);
  const confirm = async () => {
    setBusy(true);
    try {
      await deleteSession(session.id);
      // The feed's `session_deleted` updates the list and leaves the view.
    } catch (e) {
      setError({ text: errorMessage(e), kind: errorKind(e) });
      setBusy(false);
    }
  };
  const onKeyDown = (e: KeyboardEvent) => modalKeyDown(e, dialog.current, onClose);
  return (
    <div class="overlay">
      <div
        class="dialog confirm-delete"
        role="alertdialog"
        aria-modal="true"
        aria-labelledby="delete-title"
        aria-describedby="delete-what"
        data-testid="delete-confirm"
        ref={dialog}
        onKeyDown={onKeyDown}
      >
        <h2 id="delete-title">
          Delete “<span data-testid="delete-session-name">{visible(session.title)}</span>”?
        </h2>
        <p id="delete-what">
          Its transcript, tasks, approvals, costs and the record of its changes are deleted for good.{" "}
          <strong>This cannot be undone.</strong> The files in {visible(session.workspace)} stay as they are, and
          triggers on that folder keep working.
        </p>
        {error && (
          <p class="notice error" role="alert" data-testid="delete-error" data-error-kind={error.kind ?? ""}>
            {error.text}
          </p>
        )}
        <div class="dialog-buttons">
          <button type="button" class="danger" data-testid="delete-confirm-yes" disabled={busy} onClick={() => void confirm()}>
            Delete session
          </button>
          <button type="button" ref={cancel} data-testid="delete-confirm-no" onClick={onClose}>
            Cancel
          </button>
        </div>
      </div>
    </div>
  );
}
