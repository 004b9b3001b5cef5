// "Edit and send again", "Rewind to here" and "Fork from here" under one of the person's
// messages; the first is a rewind that then puts the message in the box to edit. A rewind puts
// the conversation and the files back to before the message (the runtime refuses it when
// a file was changed since, naming the files; the person can keep theirs and rewind the
// rest); a fork starts a new session from there in a place the runtime chooses (a git
// worktree for a workspace in a git work tree, else a copy), and says which.
import { useContext, useState } from "preact/hooks";
import { errorMessage, forkSession, redoUndo, rewindSession } from "../../api/commands";
import { hrefOf } from "../../lib/route";
import { ComposerContext } from "./composerDraft";
import { forkSaid } from "./forkWords";

/** Why the person goes back: to rewind only, or to edit the message and send it again. */
type Purpose = "rewind" | "edit";

type Step =
  | { at: "idle" }
  | { at: "confirm"; purpose: Purpose }
  | { at: "conflict"; purpose: Purpose; files: string[] }
  | { at: "done"; text: string; href?: string; undo?: number }
  | { at: "failed"; text: string };

interface Props {
  sessionId: number;
  entryId: number;
  /** The message's words: "Edit and send again" puts them in the box. */
  text: string;
}

export function RewindActions({ sessionId, entryId, text }: Props) {
  const [step, setStep] = useState<Step>({ at: "idle" });
  const [busy, setBusy] = useState(false);
  const composer = useContext(ComposerContext);

  const rewind = async (purpose: Purpose, keepTheirs: boolean) => {
    setBusy(true);
    try {
      const r = await rewindSession(sessionId, entryId, keepTheirs);
      if (r.files.id === null && r.files.conflicts.length > 0) {
        setStep({ at: "conflict", purpose, files: r.files.conflicts.map((c) => c.path) });
      } else {
        const n = r.files.restored.length;
        const kept = r.files.kept.length > 0 ? `; your versions of ${r.files.kept.join(", ")} kept` : "";
        const then = purpose === "edit" ? " Edit the message below and send it." : "";
        setStep({
          at: "done",
          text: `Rewound: ${n === 1 ? "1 file" : `${n} files`} put back${kept}.${then}`,
          undo: r.files.id ?? undefined,
        });
        if (purpose === "edit") composer?.put(text);
      }
    } catch (e) {
      setStep({ at: "failed", text: errorMessage(e) });
    } finally {
      setBusy(false);
    }
  };

  const undoRewind = async (id: number) => {
    setBusy(true);
    try {
      await redoUndo(id);
      setStep({ at: "done", text: "The rewind was undone: the conversation and the files are as they were." });
    } catch (e) {
      setStep({ at: "failed", text: errorMessage(e) });
    } finally {
      setBusy(false);
    }
  };

  const fork = async () => {
    setBusy(true);
    try {
      const f = await forkSession(sessionId, entryId);
      setStep({ at: "done", text: forkSaid(f), href: hrefOf({ name: "session", id: f.session_id }) });
    } catch (e) {
      setStep({ at: "failed", text: errorMessage(e) });
    } finally {
      setBusy(false);
    }
  };

  switch (step.at) {
    case "idle":
      return (
        <div class="msg-actions" data-testid="rewind-actions">
          <button type="button" class="link" data-testid="edit-resend" onClick={() => setStep({ at: "confirm", purpose: "edit" })}>
            Edit and send again
          </button>
          <button type="button" class="link" data-testid="rewind-here" onClick={() => setStep({ at: "confirm", purpose: "rewind" })}>
            Rewind to here
          </button>
          <button type="button" class="link" data-testid="fork-here" disabled={busy} onClick={() => void fork()}>
            Fork from here
          </button>
        </div>
      );
    case "confirm":
      return (
        <div class="msg-actions" role="alertdialog" aria-label="Rewind to here">
          <span>This message and everything after it are set aside, and the files go back to how they were before it.</span>
          <button type="button" data-testid="rewind-cancel" onClick={() => setStep({ at: "idle" })}>
            Cancel
          </button>
          <button type="button" class="danger" data-testid="rewind-confirm" disabled={busy} onClick={() => void rewind(step.purpose, false)}>
            {step.purpose === "edit" ? "Rewind and edit" : "Rewind"}
          </button>
        </div>
      );
    case "conflict":
      return (
        <div class="msg-actions" role="alertdialog" aria-label="Files changed since">
          <span data-testid="rewind-conflicts">Changed since: {step.files.join(", ")}. Nothing was rewound.</span>
          <button type="button" data-testid="rewind-cancel" onClick={() => setStep({ at: "idle" })}>
            Cancel
          </button>
          <button type="button" data-testid="rewind-keep-theirs" disabled={busy} onClick={() => void rewind(step.purpose, true)}>
            Keep mine, rewind the rest
          </button>
        </div>
      );
    case "done":
      return (
        <div class="msg-actions muted" role="status" data-testid="rewind-done">
          {step.text} {step.href && <a href={step.href}>Open it</a>}
          {step.undo !== undefined && (
            <button type="button" class="link" data-testid="rewind-undo" disabled={busy} onClick={() => void undoRewind(step.undo as number)}>
              Undo the rewind
            </button>
          )}
        </div>
      );
    case "failed":
      return (
        <div class="msg-actions" role="alert" data-testid="rewind-failed">
          {step.text}{" "}
          <button type="button" class="link" onClick={() => setStep({ at: "idle" })}>
            Close
          </button>
        </div>
      );
  }
}

/**
 * The room the actions take, held under a message that cannot go back yet (its run is still
 * going): when the run ends and they are offered, nothing below moves, so the person's place
 * in the transcript stays where it was.
 */
export function RewindSpace() {
  return (
    <div class="msg-actions rewind-space" aria-hidden="true">
      <button type="button" class="link" tabIndex={-1} disabled>
        Edit and send again
      </button>
    </div>
  );
}
