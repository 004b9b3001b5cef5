// The review panel: a task's changed files with their diffs, and Undo (confirmed with the
// list of files) or Redo. A refused undo shows each conflicting file's three versions.
import { useEffect, useState } from "preact/hooks";
import { errorMessage, redoUndo, taskChanges, undoTask } from "../../api/commands";
import type { ChangeList, FileChange, Node, UndoReport } from "../../api/generated/bindings";
import { visible } from "../approvals/hidden";
import { diffLineClass, filesChanged } from "./diff";

function DiffView({ diff }: { diff: string }) {
  return (
    <pre class="diff" data-testid="change-diff">
      {diff.split("\n").map((line, i) => (
        <span key={i} class={diffLineClass(line)}>
          {visible(line)}
          {"\n"}
        </span>
      ))}
    </pre>
  );
}

function nodeText(n: Node | null): string {
  if (n === null) return "nothing";
  switch (n.type) {
    case "file":
      return `${n.size} bytes, mode ${n.mode.toString(8)}`;
    case "symlink":
      return `symlink → ${n.target}`;
    case "dir":
      return "directory";
  }
}

function FileView({ f }: { f: FileChange }) {
  return (
    <div class="change-file" data-testid="change-file" data-path={f.path} data-kind={f.kind}>
      <div class="effect-label">
        <span class={`change-kind ${f.kind}`}>{f.kind}</span> <code>{f.from ? `${f.from} → ${f.path}` : f.path}</code>
      </div>
      {f.diff ? (
        <DiffView diff={f.diff} />
      ) : (
        <div class="muted">
          {nodeText(f.before)} → {nodeText(f.after)}
        </div>
      )}
    </div>
  );
}

function Refused({ report }: { report: UndoReport }) {
  return (
    <div class="notice error" role="alert" data-testid="undo-refused">
      Changed since the task, so nothing was undone:
      {report.conflicts.map((c) => (
        <div key={c.path} class="conflict" data-testid="undo-conflict" data-path={c.path}>
          <code>{c.path}</code>: before the task {nodeText(c.original)}; the task left {nodeText(c.task_left)}; now{" "}
          {nodeText(c.current)}
          {c.diff_since && <DiffView diff={c.diff_since} />}
        </div>
      ))}
    </div>
  );
}

export function ReviewPanel({ taskId, onClose }: { taskId: number; onClose: () => void }) {
  const [list, setList] = useState<ChangeList | null>(null);
  const [confirming, setConfirming] = useState(false);
  const [report, setReport] = useState<UndoReport | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const load = async () => {
    try {
      setList(await taskChanges(taskId));
    } catch (e) {
      setError(errorMessage(e));
    }
  };
  useEffect(() => {
    void load();
  }, [taskId]);
  const act = async (f: () => Promise<UndoReport>) => {
    setBusy(true);
    setError(null);
    try {
      const r = await f();
      setReport(r);
      setConfirming(false);
      await load();
    } catch (e) {
      setError(errorMessage(e));
    } finally {
      setBusy(false);
    }
  };
  const refused = report !== null && report.id === null && report.conflicts.length > 0;
  return (
    <div class="overlay">
      <div class="dialog review" role="dialog" aria-modal="true" aria-labelledby="review-title" data-testid="review-panel">
        <h2 id="review-title">
          Task {taskId}: {list ? filesChanged(list.files.length) : "…"}
        </h2>
        {list?.files.map((f) => <FileView f={f} key={f.path} />)}
        {list?.undoable === "pruned" && (
          <p class="notice" data-testid="snapshot-pruned">
            Snapshot pruned: the kept contents of this task were removed by retention, so it can no longer be undone.
          </p>
        )}
        {list?.undoable === "undone" && (
          <p class="muted" data-testid="undone-note">
            Undone (undo {list.undone_by}).
          </p>
        )}
        {refused && report && <Refused report={report} />}
        {report && report.id !== null && (
          <p class="notice" data-testid="undo-done">
            {report.kind === "redo" ? "Redone" : "Undone"}: {report.restored.length} path(s) restored
            {report.kept.length > 0 && `; kept your versions of ${report.kept.join(", ")}`}.
          </p>
        )}
        {confirming && list && (
          <div class="confirm" data-testid="undo-confirm">
            <p>Undo the changes of task {taskId}? These files go back to how they were before it:</p>
            <ul>
              {list.files.map((f) => (
                <li key={f.path} data-testid="undo-confirm-file">
                  <code>{f.from ?? f.path}</code>
                </li>
              ))}
            </ul>
          </div>
        )}
        {error && <div class="notice error" role="alert">{error}</div>}
        <div class="dialog-buttons">
          {list?.undoable === "yes" && !confirming && (
            <button type="button" class="danger" data-testid="undo" disabled={busy} onClick={() => setConfirming(true)}>
              Undo…
            </button>
          )}
          {confirming && (
            <button type="button" class="danger" data-testid="confirm-undo" disabled={busy} onClick={() => act(() => undoTask(taskId, false))}>
              Undo these files
            </button>
          )}
          {refused && (
            <button type="button" data-testid="keep-theirs" disabled={busy} onClick={() => act(() => undoTask(taskId, true))}>
              Keep the changed files, undo the rest
            </button>
          )}
          {list?.undoable === "undone" && list.undone_by !== null && (
            <button type="button" data-testid="redo" disabled={busy} onClick={() => act(() => redoUndo(list.undone_by as number))}>
              Redo
            </button>
          )}
          <button type="button" data-testid="close-review" onClick={onClose}>
            Close
          </button>
        </div>
      </div>
    </div>
  );
}
