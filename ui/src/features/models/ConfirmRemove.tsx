// "Remove this model?": keyboard-first like the session delete (focus starts on Cancel,
// Tab stays inside, Esc cancels).
import { useEffect, useRef } from "preact/hooks";
import type { ModelRow } from "../../api/generated/bindings";
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
  const onKeyDown = (e: KeyboardEvent) => {
    const root = dialog.current;
    if (!root) return;
    if (e.key === "Escape") {
      e.preventDefault();
      e.stopPropagation();
      onClose();
    } else if (e.key === "Tab") {
      const items = [...root.querySelectorAll<HTMLElement>("button:not([disabled])")];
      if (items.length === 0) return;
      const at = items.indexOf(document.activeElement as HTMLElement);
      const next = e.shiftKey ? (at <= 0 ? items.length - 1 : at - 1) : at === items.length - 1 || at < 0 ? 0 : at + 1;
      e.preventDefault();
      items[next].focus();
    }
  };
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
