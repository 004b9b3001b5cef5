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
