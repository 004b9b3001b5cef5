import { describe, expect, it } from "vitest";
import type { UndoReport } from "../../api/generated/bindings";
import { diffLineClass, filesChanged, undoSentence } from "./diff";

describe("the review panel's diff lines", () => {
  it("colours headers, hunks, additions and deletions", () => {
    expect(diffLineClass("--- a/x")).toBe("diff-file");
    expect(diffLineClass("+++ b/x")).toBe("diff-file");
    expect(diffLineClass("@@ -1 +1 @@")).toBe("diff-hunk");
    expect(diffLineClass("+new")).toBe("diff-add");
    expect(diffLineClass("-old")).toBe("diff-del");
    expect(diffLineClass(" same")).toBe("");
  });
  it("counts files", () => {
    expect(filesChanged(1)).toBe("1 file changed");
    expect(filesChanged(3)).toBe("3 files changed");
  });
});

describe("the status line after an undo", () => {
  const report = (over: Partial<UndoReport>): UndoReport => ({
    id: 7,
    kind: "undo",
    dry_run: false,
    restored: [],
    unchanged: [],
    conflicts: [],
    kept: [],
    ...over,
  });
  it("says what was undone or redone in one sentence, counting files only", () => {
    const files = ["a.txt", "new/b.txt"];
    expect(undoSentence(report({ restored: ["a.txt", "new", "new/b.txt"] }), files)).toBe("Undid 2 files.");
    expect(undoSentence(report({ kind: "redo", restored: ["a.txt"] }), files)).toBe("Redid a.txt.");
    expect(undoSentence(report({ restored: ["new/b.txt"], kept: ["a.txt"] }), files)).toBe(
      "Undid new/b.txt. Kept your version of a.txt.",
    );
  });
});
