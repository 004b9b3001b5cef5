import { describe, expect, it } from "vitest";
import type { Fork } from "../../api/generated/bindings";
import { forkSaid } from "./forkWords";

const made = (f: Partial<Fork>): Fork => ({
  session_id: 4, from_session: 1, at_entry: 9, place: "copy", workspace: "/home/p/app-fork-4", branch: null, entries: 3, ...f,
});

describe("what a fork made, said to the person", () => {
  it("names the worktree's branch and folder", () => {
    const f = made({ place: "worktree", branch: "pocketpilot/fork-4" });
    expect(forkSaid(f)).toBe("Forked into a git worktree on branch pocketpilot/fork-4 at /home/p/app-fork-4 (session 4).");
  });

  it("says a copy is a copy, and where", () => {
    expect(forkSaid(made({}))).toBe("Forked into a copy at /home/p/app-fork-4 (session 4).");
  });

  it("says the same folder is shared", () => {
    expect(forkSaid(made({ place: "same", workspace: "/home/p/app" }))).toBe("Forked into session 4, in the same folder (/home/p/app).");
  });
});
