// What a fork made, in the person's words: the runtime chose the place (a git worktree for
// a workspace in a git work tree, else a copy), so the window says which, and where.
import type { Fork } from "../../api/generated/bindings";

export function forkSaid(f: Fork): string {
  const session = `session ${f.session_id}`;
  switch (f.place) {
    case "worktree":
      return `Forked into a git worktree on branch ${f.branch ?? "(none)"} at ${f.workspace} (${session}).`;
    case "copy":
      return `Forked into a copy at ${f.workspace} (${session}).`;
    case "same":
      return `Forked into ${session}, in the same folder (${f.workspace}).`;
  }
}
