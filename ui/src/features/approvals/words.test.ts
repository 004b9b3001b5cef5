import { describe, expect, it } from "vitest";
import { approvalTitle, hostOf } from "./words";

describe("approvals in words", () => {
  it("says what will happen and where", () => {
    expect(approvalTitle({ kind: "command", command: "cargo test", cwd: "/home/p/api" }, "shell_execute")).toBe(
      "Run a command in api",
    );
    expect(approvalTitle({ kind: "diff", path: "/w/src/notes.txt", diff: "" }, "write_file")).toBe("Change notes.txt");
    expect(approvalTitle({ kind: "delete", path: "/w/old.log" }, "delete_file")).toBe("Delete old.log");
    expect(approvalTitle({ kind: "fetch", url: "https://example.com/a?b=1" }, "web_fetch")).toBe(
      "Fetch a page from example.com",
    );
    expect(approvalTitle({ kind: "memory", scope: "global", text: "x" }, "remember")).toBe(
      "Remember a note for every workspace",
    );
    expect(approvalTitle({ kind: "none" }, "notes.search")).toBe("Use notes.search");
  });

  it("keeps a URL that does not parse", () => {
    expect(hostOf("not a url")).toBe("not a url");
  });
});
