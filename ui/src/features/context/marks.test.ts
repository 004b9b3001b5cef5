import { describe, expect, it } from "vitest";
import type { CompactionInfo, ContextMarks, ContextReset, Entry, Task } from "../../api/generated/bindings";
import { historyItems } from "../stream/history";
import { initialLive, reduceLive } from "../stream/reducer";
import { ev, restart } from "../stream/events.test-support";
import { causeLabel, markFromEntry, placeMarks } from "./marks";

const info = (entry_id: number, task_id: number, cause: CompactionInfo["cause"]): CompactionInfo => ({
  entry_id,
  task_id,
  cause,
  summary: `summary ${entry_id}`,
  fallback: false,
  replaces: [1, 2],
  elided: [],
  instructions_elided: [],
  tokens_before: 900,
  tokens_after: 300,
  created_at: "",
});
const reset = (entry_id: number, after_task: number | null): ContextReset => ({ entry_id, after_task, text: null, created_at: "" });
const entry = (id: number, task_id: number | null, kind: string, content: Entry["content"]): Entry => ({
  id,
  session_id: 1,
  task_id,
  kind,
  content,
  created_at: "",
});

describe("placeMarks", () => {
  it("puts a manual compaction and a fresh context after their task, in entry order", () => {
    const marks: ContextMarks = { compactions: [info(9, 2, "manual")], resets: [reset(12, 2), reset(5, 1)] };
    const placed = placeMarks([1, 2, 3], marks);
    expect(placed.top).toEqual([]);
    expect(placed.after.get(1)?.map((m) => m.key)).toEqual(["r5"]);
    expect(placed.after.get(2)?.map((m) => m.key)).toEqual(["c9", "r12"]);
    expect(placed.after.has(3)).toBe(false);
  });

  it("leaves a compaction the runtime made to its task (drawn where it happened)", () => {
    const placed = placeMarks([1], { compactions: [info(4, 1, "before_request"), info(5, 1, null)], resets: [] });
    expect(placed.after.size).toBe(0);
    expect(placed.top).toEqual([]);
  });

  it("shows one after a task older than those shown on top, and one after a newer task at the end", () => {
    const placed = placeMarks([10, 11], { compactions: [], resets: [reset(3, 4), reset(1, null), reset(90, 12)] });
    expect(placed.top.map((m) => m.key)).toEqual(["r1", "r3"]);
    expect(placed.after.get(11)?.map((m) => m.key)).toEqual(["r90"]);
  });
});

describe("compaction items", () => {
  const task: Task = {
    id: 7, session_id: 1, goal: "g", trigger: "chat", provider: null, follow_up_of: null, status: "completed",
    step_count: 1, prompt_tokens: 0, completion_tokens: 0, active_ms: 0, grants: [], mcp: [], final_answer: null,
    error: null, created_at: "", started_at: null, finished_at: null,
    extra: { steps: 0, seconds: 0, tokens: 0, usd: null }, pause: null,
  };

  it("history draws a stored compaction the runtime made where it stands, and leaves a manual one to the marks", () => {
    const entries = [
      entry(1, 7, "user", { text: "hello" }),
      entry(2, 7, "compaction", { text: "S", cause: "before_request", replaces: [1], elided: [3], instructions_elided: [], tokens_before: 5000, tokens_after: 1200, fallback: false }),
      entry(3, 7, "assistant", { text: "answer" }),
      entry(4, 7, "compaction", { text: "M", cause: "manual", replaces: [1, 3], fallback: false }),
    ];
    const items = historyItems(task, entries);
    expect(items.map((i) => i.kind)).toEqual(["user", "compaction", "assistant"]);
    const c = items[1];
    expect(c.kind === "compaction" && c.mark).toEqual({
      cause: "before_request", tokensBefore: 5000, tokensAfter: 1200, summary: "S", fallback: false,
      summarised: [1], elided: [3], instructionsElided: [],
    });
  });

  it("an entry written before the cause was kept is still drawn in its task", () => {
    expect(markFromEntry(entry(2, 7, "compaction", { text: "old", replaces: [1] }))?.cause).toBeNull();
  });

  it("the live reducer adds a divider per context_compacted event, not for a manual one", () => {
    restart();
    let s = initialLive(7);
    s = reduceLive(s, ev("task_created", { goal: "g", session_id: 1, trigger: "chat", follow_up_of: null }));
    s = reduceLive(s, ev("context_compacted", {
      cause: "before_request", tokens_before: 3000, tokens_after: 900, window: 4096, window_source: "setting",
      elided: [4], summarised: [], instructions_elided: [], summary: null, fallback: false, placed_at: 0,
    }));
    s = reduceLive(s, ev("context_compacted", {
      cause: "manual", tokens_before: 900, tokens_after: 400, window: 4096, window_source: "setting",
      elided: [], summarised: [1], instructions_elided: [], summary: "x", fallback: false, placed_at: 0,
    }));
    expect(s.items.map((i) => i.kind)).toEqual(["user", "compaction"]);
    const c = s.items[1];
    expect(c.kind === "compaction" && c.mark.elided).toEqual([4]);
  });

  it("names each cause", () => {
    expect(causeLabel("overflow")).toContain("refused");
    expect(causeLabel("manual")).toContain("Compact now");
  });
});
