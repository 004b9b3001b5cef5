// "N files changed" under a task's answer; opens the review panel.
import { useRef, useState } from "preact/hooks";
import type { TaskChanges } from "../../api/generated/bindings";
import { filesChanged } from "./diff";
import { ReviewPanel } from "./ReviewPanel";

export function ChangesLine({ changes }: { changes: TaskChanges }) {
  const [open, setOpen] = useState(false);
  const button = useRef<HTMLButtonElement>(null);
  // Closing the panel (Esc, Close) puts focus back on the line that opened it.
  const close = () => {
    setOpen(false);
    requestAnimationFrame(() => button.current?.focus());
  };
  if (changes.files === 0) return null;
  const state =
    changes.undoable === "undone" ? " · undone" : changes.undoable === "pruned" ? " · snapshot pruned" : "";
  return (
    <>
      <button
        type="button"
        class="link changes-line"
        data-testid="changes-line"
        data-undoable={changes.undoable}
        ref={button}
        onClick={() => setOpen(true)}
      >
        {filesChanged(changes.files)}
        {state}
      </button>
      {open && <ReviewPanel taskId={changes.task_id} onClose={close} />}
    </>
  );
}
