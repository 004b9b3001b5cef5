import type { UndoReport } from "../../api/generated/bindings";

// Unified diff lines → the classes the review panel colours them with.
export function diffLineClass(line: string): string {
  if (line.startsWith("+++") || line.startsWith("---")) return "diff-file";
  if (line.startsWith("@@")) return "diff-hunk";
  if (line.startsWith("+")) return "diff-add";
  if (line.startsWith("-")) return "diff-del";
  return "";
}

/** "1 file changed", "3 files changed". */
export function filesChanged(n: number): string {
  return `${n} file${n === 1 ? "" : "s"} changed`;
}

/**
 * The one status line after an undo or a redo: "Undid 2 files.", "Redid notes.txt.",
 * with the files kept as the person had them. `files` are the listed files' paths (a
 * rename's both), so directories the undo also restored are not counted.
 */
export function undoSentence(r: UndoReport, files: string[]): string {
  const verb = r.kind === "redo" ? "Redid" : "Undid";
  const listed = new Set(files);
  const done = r.restored.filter((p) => listed.has(p));
  const what = done.length === 1 ? done[0] : `${done.length} files`;
  const kept = r.kept.length > 0 ? ` Kept your version of ${r.kept.join(", ")}.` : "";
  if (done.length === 0 && r.kept.length === 0) return "Nothing to restore: the files were already as they should be.";
  if (done.length === 0) return kept.trim();
  return `${verb} ${what}.${kept}`;
}
