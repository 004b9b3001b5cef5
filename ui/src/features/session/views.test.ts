import { describe, expect, it } from "vitest";
import type { Entry, Task, TaskEvent } from "../../api/generated/bindings";
import type { JsonObject } from "../../api/json";
import { historyItems } from "../stream/history";
import type { Item } from "../stream/items";
import { reduceAll } from "../stream/reducer";
import { delta, ev, restart } from "../stream/events.test-support";
import { drawnLive, handOver, handOverCache, sessionViews } from "./views";

/** A run the window watched: a write asked approval (with its diff), then the answer. */
function watched(): TaskEvent[] {
  restart();
  return [
    ev("task_created", { goal: "write it", session_id: 1, trigger: "chat" }),
    ev("task_started", { provider: "scripted:x", resumed: false }),
    ev("model_turn_started", { step: 1 }),
    ev("model_turn_completed", {
      step: 1,
      text: "Writing.",
      tool_calls: [{ id: "c1", name: "write_file", arguments: '{"path":"h.txt","content":"x"}' }],
      usage: { prompt_tokens: 10, completion_tokens: 2 },
    }),
    ev("approval_required", {
      approval_id: 3, call_id: "c1", name: "write_file", arguments: { path: "h.txt", content: "x" },
      capability: "fs:write", effect: { kind: "diff", path: "h.txt", diff: "+x" }, reason: "needs approval", step: 1,
    }),
    ev("approval_resolved", { approval_id: 3, call_id: "c1", approved: true, session_grant: false, by: "window" }),
    ev("tool_call_started", { call_id: "c1", name: "write_file", arguments: "{}" }),
    ev("tool_call_completed", { call_id: "c1", name: "write_file", output: "wrote h.txt", changed: ["h.txt"] }),
    ev("model_turn_started", { step: 2 }),
    delta("Done"),
    ev("model_turn_completed", { step: 2, text: "Done.", tool_calls: [], usage: { prompt_tokens: 20, completion_tokens: 1 } }),
    ev("agent_completed", { final_answer: "Done." }),
    ev("task_completed", { final_answer: "Done." }),
  ];
}

const task = (status: Task["status"]): Task => ({
  id: 7, session_id: 1, goal: "write it", trigger: "chat", provider: null, follow_up_of: null,
  status, step_count: 2, prompt_tokens: 30, completion_tokens: 3, active_ms: 0, grants: [], mcp: [],
  final_answer: status === "completed" ? "Done." : null, error: null, created_at: "",
  started_at: null, finished_at: null, extra: { steps: 0, seconds: 0, tokens: 0, usd: 0 }, pause: null,
});

const entry = (id: number, kind: string, content: JsonObject): Entry => ({
  id, session_id: 1, task_id: 7, kind, content, created_at: "",
});

/** What the store holds once the run ended. */
const stored: Entry[] = [
  entry(41, "user", { text: "write it" }),
  entry(42, "assistant", { text: "Writing.", tool_calls: [{ id: "c1", name: "write_file", arguments: '{"path":"h.txt","content":"x"}' }] }),
  entry(43, "tool_result", { call_id: "c1", text: "wrote h.txt", is_error: false }),
  entry(44, "assistant", { text: "Done.", tool_calls: [] }),
];

const history = (t: Task) => new Map([[7, historyItems(t, stored)]]);
const users = (items: Item[]) => items.filter((i) => i.kind === "user");

describe("a task the window watched live", () => {
  it("is drawn from its live run while the run goes on", () => {
    const live = reduceAll(7, watched().slice(0, 10));
    const [v] = sessionViews(1, [task("running")], { 7: live }, history(task("running")));
    expect(v.live).toBe(true);
    expect(v.items).toBe(live.items);
    expect(v.streaming).toBe("Done");
  });

  it("stays drawn live after its end until the store says it ended: never a history without the answer", () => {
    const live = reduceAll(7, watched());
    expect(live.closed).toBe(true);
    const stale = task("running");
    const [v] = sessionViews(1, [stale], { 7: live }, new Map([[7, historyItems(stale, stored.slice(0, 3))]]));
    expect(v.live).toBe(true);
    expect(v.task.status).toBe("completed");
    expect(v.items).toBe(live.items);
  });

  it("gives way to the history read back from the store, whose messages can be gone back to", () => {
    const live = reduceAll(7, watched());
    const done = task("completed");
    const [v] = sessionViews(1, [done], { 7: live }, history(done));
    expect(v.live).toBe(false);
    expect(users(v.items)).toEqual([{ kind: "user", key: "e41", text: "write it", entryId: 41, rewound: false }]);
    // The same transcript, each thing once, in the same places (the view keys items by place).
    expect(v.items.map((i) => i.kind)).toEqual(live.items.map((i) => i.kind));
    expect(v.items.filter((i) => i.kind === "assistant").map((i) => i.kind === "assistant" && i.text)).toEqual(["Writing.", "Done."]);
    expect(v.steps).toBe(2);
    expect(v.tokens).toBe(33);
  });

  it("keeps on the tool card what only the live run saw: the diff asked about", () => {
    const live = reduceAll(7, watched());
    const done = task("completed");
    const [v] = sessionViews(1, [done], { 7: live }, history(done));
    expect(v.items.find((i) => i.kind === "tool")).toMatchObject({ callId: "c1", status: "done", output: "wrote h.txt", diff: "+x" });
  });
});

describe("handing a task over", () => {
  const card = (patch: Partial<Extract<Item, { kind: "tool" }>>): Item => ({
    kind: "tool", key: "k", callId: "c1", name: "run_command", arguments: "{}", status: "failed", output: "no", ...patch,
  });

  it("keeps a rejection a rejection and the rule that allowed a call", () => {
    const [rejected] = handOver([card({ status: "rejected" })], [card({ key: "e5:c1" })]);
    expect(rejected).toMatchObject({ key: "e5:c1", status: "rejected" });
    const [allowed] = handOver([card({ status: "done", allowedBy: "`ls *`" })], [card({ key: "e5:c1", status: "done" })]);
    expect(allowed).toMatchObject({ status: "done", allowedBy: "`ls *`" });
  });

  it("keeps the sentence the run ended with", () => {
    const said: Item = { kind: "notice", key: "7:end", tone: "error", text: "Budget exceeded: 3 steps" };
    const stored: Item = { kind: "notice", key: "t7:end", tone: "error", text: "The task ran out of budget.", detail: "steps", failed: true };
    expect(handOver([said], [stored])).toEqual([{ ...said, key: "t7:end" }]);
  });

  it("answers the history itself when the live run adds nothing, and the same array again", () => {
    const hist = [card({ key: "e5:c1", status: "done" })];
    expect(handOver([card({ status: "done" })], hist)).toBe(hist);
    const cached = handOverCache();
    const live = [card({ status: "rejected" })];
    const read = [card({ key: "e5:c1" })];
    const first = cached(7, live, read);
    expect(first).not.toBe(read);
    expect(cached(7, live, read)).toBe(first);
    expect(cached(7, live, [...read])).not.toBe(first);
  });
});

describe("the tasks of a session view", () => {
  it("draws a task it never watched from the store", () => {
    const done = task("completed");
    expect(drawnLive(done, undefined)).toBe(false);
    const [v] = sessionViews(1, [done], {}, history(done));
    expect(v.live).toBe(false);
    expect(users(v.items)[0]).toMatchObject({ entryId: 41 });
  });

  it("draws a task started here before the store's list has it, live", () => {
    const live = reduceAll(8, watched().slice(0, 3));
    const views = sessionViews(1, [task("completed")], { 8: live }, history(task("completed")));
    expect(views.map((v) => [v.task.id, v.live])).toEqual([
      [7, false],
      [8, true],
    ]);
    expect(views[1].task.session_id).toBe(1);
  });
});
