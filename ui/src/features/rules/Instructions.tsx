// The instruction files in effect, root first and nearest last (the later one wins). Each
// opens read-only in the window, with "Edit in editor" for the desktop's default app.
import { useEffect, useRef, useState } from "preact/hooks";
import { errorMessage, instructionText, openInstruction } from "../../api/commands";
import type { InstructionFile, InstructionText } from "../../api/generated/bindings";
import { modalKeyDown, useEscapeAnywhere } from "../../lib/dialogKeys";
import { visible } from "../approvals/hidden";
import "./rules.css";

type Where = { workspace: string; sessionId: number | null };

function InstructionViewer({ file, where, onClose }: { file: string; where: Where; onClose: () => void }) {
  const [text, setText] = useState<InstructionText | null>(null);
  const [error, setError] = useState<string | null>(null);
  const dialog = useRef<HTMLDivElement>(null);
  useEscapeAnywhere(onClose);
  useEffect(() => {
    instructionText(where.workspace, where.sessionId, file).then(setText, (e) => setError(errorMessage(e)));
    dialog.current?.focus();
  }, [file]);
  const edit = async () => {
    setError(null);
    try {
      await openInstruction(where.workspace, where.sessionId, file);
    } catch (e) {
      setError(errorMessage(e));
    }
  };
  return (
    <div class="overlay">
      <div
        class="dialog instruction-viewer"
        role="dialog"
        aria-modal="true"
        aria-labelledby="instruction-title"
        data-testid="instruction-viewer"
        tabIndex={-1}
        ref={dialog}
        onKeyDown={(e) => modalKeyDown(e, dialog.current, onClose)}
      >
        <h2 id="instruction-title">
          <code>{visible(file)}</code>
        </h2>
        <p class="muted">Read-only here; Edit in editor opens it in your desktop's default app.</p>
        {text && (
          <pre class="instruction-text" data-testid="instruction-text" tabIndex={0}>
            {visible(text.text)}
          </pre>
        )}
        {error && (
          <div class="notice error" role="alert" data-testid="instruction-error">
            {error}
          </div>
        )}
        <div class="dialog-buttons">
          <button type="button" data-testid="edit-instruction" onClick={edit}>
            Edit in editor
          </button>
          <button type="button" data-testid="close-instruction" onClick={onClose}>
            Close
          </button>
        </div>
      </div>
    </div>
  );
}

export function Instructions({ files, workspace, sessionId }: { files: InstructionFile[] } & Where) {
  const [open, setOpen] = useState<string | null>(null);
  const opener = useRef<HTMLElement | null>(null);
  const close = () => {
    setOpen(null);
    requestAnimationFrame(() => opener.current?.focus());
  };
  return (
    <section class="card" data-testid="instructions">
      <h2>Instructions in effect</h2>
      <p class="muted">
        AGENTS.md of the workspace and of the folders the agent worked in, root first and nearest last: where they
        disagree, the nearer one wins. They shape how the agent works, never its tools, permissions or approvals.
      </p>
      {files.length === 0 ? (
        <p class="muted" data-testid="no-instructions">No AGENTS.md applies.</p>
      ) : (
        <ul>
          {files.map((f) => (
            <li key={f.path} data-testid="instruction-file" data-path={f.path}>
              <button
                type="button"
                class="link"
                data-testid="open-instruction"
                onClick={(e) => {
                  opener.current = e.currentTarget as HTMLElement;
                  setOpen(f.path);
                }}
              >
                <code>{f.path}</code>
              </button>{" "}
              <span class="muted">{f.bytes} bytes{f.truncated ? ", cut at the size cap" : ""}</span>
            </li>
          ))}
        </ul>
      )}
      {open !== null && <InstructionViewer file={open} where={{ workspace, sessionId }} onClose={close} />}
    </section>
  );
}
