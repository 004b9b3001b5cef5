import { describe, expect, it } from "vitest";
import { diffLineClass, filesChanged } from "./diff";

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
