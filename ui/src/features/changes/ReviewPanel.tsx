// The review panel: a task's changed files with their diffs; Undo of the whole task
// (confirmed with the list of files) or of one file, Redo, and "Open in editor". A refused
// undo shows each conflicting file's three versions. After an undo the panel reloads: an
// undone file is marked so, its diff (what was undone) folded away, since the file on disk
// is back as it was before the task. Esc closes it.
import { useEffect, useRef, useState } from "preact/hooks";
import { errorMessage, openTaskFile, redoUndo, taskChanges, undoFiles, undoTask } from "../../api/commands";
import type { ChangeList, FileChange, Node, UndoReport } from "../../api/generated/bindings";
import { modalKeyDown, useEscapeAnywhere } from "../../lib/dialogKeys";
import { visible } from "../approvals/hidden";
import { diffLineClass, filesChanged, undoSentence } from "./diff";
import "./changes.css";

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

/** Whether the file is there now: after an undo, as before the task (a renamed file back
 * at its old path); else as the task left it. */
function existsNow(f: FileChange): boolean {
  return f.undone_by !== null ? f.before !== null : f.after !== null;
}

type FileProps = {
  f: FileChange;
  busy: boolean;
  /** Whether this file alone can be undone now. */
  canUndo: boolean;
  /** The undo a "Redo this file" takes back, when that undo covered this file alone. */
  redoOwn: number | null;
  onUndo: () => void;
  onRedo: (undoId: number) => void;
  onOpen: () => void;
};

function FileView({ f, busy, canUndo, redoOwn, onUndo, onRedo, onOpen }: FileProps) {
  const undone = f.undone_by !== null;
  const name = f.from ? `${f.from} → ${f.path}` : f.path;
  const change = f.diff ? (
    <DiffView diff={f.diff} />
  ) : (
    <div class="muted">
      {nodeText(f.before)} → {nodeText(f.after)}
    </div>
  );
  return (
    <div
      class={`change-file${undone ? " undone" : ""}`}
      data-testid="change-file"
      data-path={f.path}
      data-kind={f.kind}
      data-undone={undone ? "true" : "false"}
    >
      <div class="change-file-head">
        <div class="effect-label">
          <span class={`change-kind ${f.kind}`}>{f.kind}</span> <code>{visible(name)}</code>
          {undone && (
            <span class="undone-badge" data-testid="file-undone">
              undone
            </span>
          )}
        </div>
        <div class="change-file-actions">
          {existsNow(f) && (
            <button type="button" class="small" data-testid="open-file" disabled={busy} onClick={onOpen}>
              Open in editor
            </button>
          )}
          {canUndo && (
            <button type="button" class="small" data-testid="undo-file" disabled={busy} onClick={onUndo}>
              Undo this file
            </button>
          )}
          {redoOwn !== null && (
            <button type="button" class="small" data-testid="redo-file" disabled={busy} onClick={() => onRedo(redoOwn)}>
              Redo this file
            </button>
          )}
        </div>
      </div>
      {undone ? (
        <details class="undone-change">
          <summary>Back as before the task. Show what was undone</summary>
          {change}
        </details>
      ) : (
        change
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

/** What a refused undo was, so "keep the changed files" repeats it. */
type Attempt = { paths: string[] | null };

export function ReviewPanel({ taskId, onClose }: { taskId: number; onClose: () => void }) {
  const [list, setList] = useState<ChangeList | null>(null);
  const [confirming, setConfirming] = useState(false);
  const [report, setReport] = useState<UndoReport | null>(null);
  const [status, setStatus] = useState<string | null>(null);
  const [attempt, setAttempt] = useState<Attempt>({ paths: null });
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const dialog = useRef<HTMLDivElement>(null);
  useEscapeAnywhere(onClose);
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
  useEffect(() => {
    dialog.current?.focus();
  }, []);
  const act = async (f: () => Promise<UndoReport>, paths: string[] | null = null) => {
    setBusy(true);
    setError(null);
    setStatus(null);
    const files = (list?.files ?? []).flatMap((x) => (x.from ? [x.from, x.path] : [x.path]));
    try {
      const r = await f();
      setReport(r);
      setAttempt({ paths });
      setConfirming(false);
      if (r.id !== null) setStatus(undoSentence(r, files));
      await load();
    } catch (e) {
      setError(errorMessage(e));
    } finally {
      setBusy(false);
      // The button pressed may be gone (a file once undone has no Undo): keep focus inside.
      requestAnimationFrame(() => {
        if (!dialog.current?.contains(document.activeElement)) dialog.current?.focus();
      });
    }
  };
  const open = async (path: string) => {
    setError(null);
    try {
      await openTaskFile(taskId, path);
    } catch (e) {
      setError(errorMessage(e));
    }
  };
  const refused = report !== null && report.id === null && report.conflicts.length > 0;
  const files = list?.files ?? [];
  const live = files.filter((f) => f.undone_by === null);
  const perUndo = new Map<number, number>();
  for (const f of files) if (f.undone_by !== null) perUndo.set(f.undone_by, (perUndo.get(f.undone_by) ?? 0) + 1);
  const pathsOf = (f: FileChange) => (f.from ? [f.from, f.path] : [f.path]);
  // The one status line: what the last action did, or else the state the panel opened on.
  const line =
    status ??
    (list?.undoable === "undone" && report === null
      ? "These changes are undone: the files are back as they were before the task."
      : null);
  return (
    <div class="overlay">
      <div
        class="dialog review"
        role="dialog"
        aria-modal="true"
        aria-labelledby="review-title"
        data-testid="review-panel"
        tabIndex={-1}
        ref={dialog}
        onKeyDown={(e) => modalKeyDown(e, dialog.current, onClose)}
      >
        <h2 id="review-title">
          Task {taskId}: {list ? filesChanged(files.length) : "…"}
        </h2>
        {files.map((f) => (
          <FileView
            f={f}
            key={f.path}
            busy={busy}
            canUndo={f.undone_by === null && list?.undoable === "yes"}
            redoOwn={f.undone_by !== null && perUndo.get(f.undone_by) === 1 && files.length > 1 ? f.undone_by : null}
            onUndo={() => act(() => undoFiles(taskId, pathsOf(f), false), pathsOf(f))}
            onRedo={(id) => act(() => redoUndo(id))}
            onOpen={() => open(f.undone_by !== null && f.from ? f.from : f.path)}
          />
        ))}
        {list?.undoable === "pruned" && (
          <p class="notice" data-testid="snapshot-pruned">
            Snapshot pruned: the kept contents of this task were removed by retention, so it can no longer be undone.
          </p>
        )}
        {refused && report && <Refused report={report} />}
        <p class="review-status" role="status" data-testid="undo-status">
          {line}
        </p>
        {confirming && list && (
          <div class="confirm" data-testid="undo-confirm">
            <p>Undo the changes of task {taskId}? These files go back to how they were before it:</p>
            <ul>
              {live.map((f) => (
                <li key={f.path} data-testid="undo-confirm-file">
                  <code>{f.from ?? f.path}</code>
                </li>
              ))}
            </ul>
          </div>
        )}
        {error && (
          <div class="notice error" role="alert" data-testid="review-error">
            {error}
          </div>
        )}
        <div class="dialog-buttons">
          {list?.undoable === "yes" && !confirming && (
            <button type="button" class="danger" data-testid="undo" disabled={busy} onClick={() => setConfirming(true)}>
              {live.length < files.length ? "Undo the rest…" : "Undo…"}
            </button>
          )}
          {confirming && (
            <button type="button" class="danger" data-testid="confirm-undo" disabled={busy} onClick={() => act(() => undoTask(taskId, false))}>
              Undo these files
            </button>
          )}
          {refused && (
            <button
              type="button"
              data-testid="keep-theirs"
              disabled={busy}
              onClick={() =>
                act(() => (attempt.paths ? undoFiles(taskId, attempt.paths, true) : undoTask(taskId, true)), attempt.paths)
              }
            >
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
