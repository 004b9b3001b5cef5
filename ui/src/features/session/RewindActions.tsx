// "Rewind to here" and "Fork from here" under one of the person's messages. A rewind puts
// the conversation and the files back to before the message (the runtime refuses it when
// a file was changed since, naming the files; the person can keep theirs and rewind the
// rest); a fork starts a new session from there in a worktree or a copy.
import { useState } from "preact/hooks";
import { errorMessage, forkSession, rewindSession } from "../../api/commands";
import { hrefOf } from "../../lib/route";

type Step =
  | { at: "idle" }
  | { at: "confirm" }
  | { at: "conflict"; files: string[] }
  | { at: "done"; text: string; href?: string }
  | { at: "failed"; text: string };

export function RewindActions({ sessionId, entryId }: { sessionId: number; entryId: number }) {
  const [step, setStep] = useState<Step>({ at: "idle" });
  const [busy, setBusy] = useState(false);

  const rewind = async (keepTheirs: boolean) => {
    setBusy(true);
    try {
      const r = await rewindSession(sessionId, entryId, keepTheirs);
      if (r.files.id === null && r.files.conflicts.length > 0) {
        setStep({ at: "conflict", files: r.files.conflicts.map((c) => c.path) });
      } else {
        const kept = r.files.kept.length > 0 ? `; kept your versions of ${r.files.kept.join(", ")}` : "";
        setStep({
          at: "done",
          text: `Rewound: ${r.files.restored.length} path(s) restored${kept}. Send the message again, edited, below. (\`pocketpilot redo ${r.files.id}\` takes it back.)`,
        });
      }
    } catch (e) {
      setStep({ at: "failed", text: errorMessage(e) });
    } finally {
      setBusy(false);
    }
  };

  const fork = async () => {
    setBusy(true);
    try {
      const f = await forkSession(sessionId, entryId, "copy");
      setStep({ at: "done", text: `Forked into session ${f.session_id} (${f.workspace}).`, href: hrefOf({ name: "session", id: f.session_id }) });
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
          <button type="button" class="link" data-testid="rewind-here" onClick={() => setStep({ at: "confirm" })}>
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
          <button type="button" class="danger" data-testid="rewind-confirm" disabled={busy} onClick={() => void rewind(false)}>
            Rewind
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
          <button type="button" data-testid="rewind-keep-theirs" disabled={busy} onClick={() => void rewind(true)}>
            Keep mine, rewind the rest
          </button>
        </div>
      );
    case "done":
      return (
        <div class="msg-actions muted" role="status" data-testid="rewind-done">
          {step.text} {step.href && <a href={step.href}>Open it</a>}
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
