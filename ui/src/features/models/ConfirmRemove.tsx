// "Remove this model?": keyboard-first like the session delete (focus starts on Cancel,
// Tab stays inside, Esc cancels).
import { useEffect, useRef } from "preact/hooks";
import type { ModelRow } from "../../api/generated/bindings";
import { modalKeyDown } from "../../lib/dialogKeys";
import { builtinName, sizeOf } from "./describe";

interface Props {
  model: ModelRow;
  busy: boolean;
  onConfirm: () => void;
  onClose: () => void;
}

export function ConfirmRemove({ model, busy, onConfirm, onClose }: Props) {
  const dialog = useRef<HTMLDivElement>(null);
  const cancel = useRef<HTMLButtonElement>(null);
  useEffect(() => {
    cancel.current?.focus();
    const onFocus = (e: FocusEvent) => {
      const root = dialog.current;
      if (root && e.target instanceof Node && !root.contains(e.target)) cancel.current?.focus();
    };
    document.addEventListener("focusin", onFocus);
    return () => document.removeEventListener("focusin", onFocus);
  }, []);
  const onKeyDown = (e: KeyboardEvent) => modalKeyDown(e, dialog.current, onClose);
  const bundled = model.source === "bundled";
  return (
    <div class="overlay">
      <div
        class="dialog confirm-delete"
        role="alertdialog"
        aria-modal="true"
        aria-labelledby="remove-model-title"
        aria-describedby="remove-model-what"
        data-testid="remove-confirm"
        ref={dialog}
        onKeyDown={onKeyDown}
      >
        <h2 id="remove-model-title">Remove {builtinName(model)}?</h2>
        <p id="remove-model-what">
          {bundled
            ? "It came with PocketPilot: its file stays where the app installed it, and it is listed again the next time it is needed."
            : `Its file (${sizeOf(model.size_mib)}) is deleted from PocketPilot's models folder.`}
          {model.in_use && " Conversations without a provider use it now; they will use another model on this computer, if there is one."}
        </p>
        <div class="dialog-buttons">
          <button type="button" class="danger" data-testid="remove-confirm-yes" disabled={busy} onClick={onConfirm}>
            Remove model
          </button>
          <button type="button" ref={cancel} data-testid="remove-confirm-no" onClick={onClose}>
            Cancel
          </button>
        </div>
      </div>
    </div>
  );
}
