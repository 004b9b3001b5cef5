import { describe, expect, it } from "vitest";
import type { Entry, Task, TaskEvent } from "../../api/generated/bindings";
import type { JsonObject } from "../../api/json";
import { historyItems } from "./history";
import { initialLive, reduceAll, reduceLive } from "./reducer";
import { isTerminalEvent, TERMINAL_EVENTS } from "./terminal";
import { delta, ev, restart } from "./events.test-support";

function run(): TaskEvent[] {
  restart();
  return [
    ev("task_created", { goal: "write a haiku", session_id: 1, trigger: "chat" }),
    ev("task_started", { provider: "scripted:x", resumed: false }),
    ev("model_turn_started", { step: 1 }),
    delta("Let me "),
    delta("write it."),
    ev("model_turn_completed", {
      step: 1,
      text: "Let me write it.",
      tool_calls: [{ id: "c1", name: "write_file", arguments: '{"path":"h.txt","content":"x"}' }],
    }),
    ev("approval_required", {
      approval_id: 3,
      call_id: "c1",
      name: "write_file",
      arguments: { path: "h.txt", content: "x" },
      capability: "fs:write",
      effect: { kind: "diff", path: "h.txt", diff: "+x" },
      reason: "needs approval",
      step: 1,
    }),
    ev("approval_resolved", { approval_id: 3, call_id: "c1", approved: true, session_grant: false, by: "window" }),
    ev("tool_call_started", { call_id: "c1", name: "write_file", arguments: "{}" }),
    ev("tool_call_completed", { call_id: "c1", name: "write_file", output: "wrote h.txt", changed: ["h.txt"] }),
    ev("model_turn_started", { step: 2 }),
    delta("Done: "),
    delta("h.txt written."),
    ev("model_turn_completed", { step: 2, text: "Done: h.txt written.", tool_calls: [] }),
    ev("agent_completed", { final_answer: "Done: h.txt written." }),
    ev("task_completed", { final_answer: "Done: h.txt written." }),
  ];
}

const texts = (items: { kind: string; text?: string }[]) =>
  items.filter((i) => i.kind === "assistant").map((i) => i.text);

describe("live reducer", () => {
  it("streams text into the bubble while a turn runs", () => {
    const events = run();
    const s = reduceAll(7, events.slice(0, 5));
    expect(s.streaming).toBe("Let me write it.");
    expect(texts(s.items)).toEqual([]);
  });

  it("replaces the bubble with the completed turn: the text is shown once", () => {
    const s = reduceAll(7, run().slice(0, 6));
    expect(s.streaming).toBeNull();
    expect(texts(s.items)).toEqual(["Let me write it."]);
    expect(s.items.find((i) => i.kind === "tool")).toMatchObject({ callId: "c1", status: "planned" });
  });

  it("tracks the tool card through approval to done", () => {
    const events = run();
    let s = reduceAll(7, events.slice(0, 7));
    expect(s.approval).toMatchObject({ approvalId: 3, effect: { kind: "diff", path: "h.txt" } });
    expect(s.items.find((i) => i.kind === "tool")).toMatchObject({ status: "waiting_approval" });
    s = events.slice(7, 10).reduce(reduceLive, s);
    expect(s.approval).toBeNull();
    expect(s.items.find((i) => i.kind === "tool")).toMatchObject({ status: "done", output: "wrote h.txt" });
  });

  it("marks a rejected call as rejected", () => {
    restart();
    const s = reduceAll(7, [
      ev("model_turn_completed", { text: "", tool_calls: [{ id: "c1", name: "write_file", arguments: "{}" }] }),
      ev("approval_resolved", { approval_id: 3, call_id: "c1", approved: false, session_grant: false, by: "window" }),
      ev("tool_call_failed", { call_id: "c1", name: "write_file", error: "rejected by the user: no", kind: "rejected" }),
    ]);
    expect(s.items.find((i) => i.kind === "tool")).toMatchObject({ status: "rejected" });
  });

  it("pauses on run_paused without closing, and runs again on run_continued", () => {
    restart();
    const started = reduceAll(1, [
      ev("task_created", { goal: "g", session_id: 1, trigger: "chat" }),
      ev("task_started", { provider: "scripted:x", resumed: false }),
    ]);
    const paused = reduceLive(started, ev("run_paused", { reason: "repetition", budget: null, message: "the agent is repeating itself", repeated: null }));
    expect(paused.status).toBe("paused");
    expect(paused.closed).toBe(false);
    const going = reduceLive(paused, ev("run_continued", { raise: {}, by: "window", steer: null }));
    expect(going.status).toBe("running");
  });

  it("stays open after agent_completed and closes only on the terminal event", () => {
    const events = run();
    const atAgentCompleted = reduceAll(7, events.slice(0, -1));
    expect(atAgentCompleted.closed).toBe(false);
    expect(atAgentCompleted.finalAnswer).toBe("Done: h.txt written.");
    const done = reduceLive(atAgentCompleted, events[events.length - 1]);
    expect(done.closed).toBe(true);
    expect(done.status).toBe("completed");
    expect(texts(done.items)).toEqual(["Let me write it.", "Done: h.txt written."]);
  });

  it("ignores everything after the terminal event", () => {
    const s = reduceAll(7, run());
    expect(reduceLive(s, delta("late"))).toBe(s);
  });

  it("ignores a replayed event it has already seen (no duplicate)", () => {
    const events = run();
    const once = reduceAll(7, events);
    const twice = reduceAll(7, [...events.slice(0, 10), ...events.slice(5, 10), ...events.slice(10)]);
    expect(twice.items).toEqual(once.items);
  });

  it("stream_reset replaces the bubble's text", () => {
    let s = reduceAll(7, [delta("Hello wor")]);
    s = reduceLive(s, ev("stream_reset", { text: "" }, true));
    expect(s.streaming).toBe("");
    s = reduceLive(s, delta("Hi."));
    expect(s.streaming).toBe("Hi.");
    s = reduceLive(s, ev("stream_reset", { text: "Hi there" }, true));
    expect(s.streaming).toBe("Hi there");
  });

  it("never keeps a half answer when the run fails or is cancelled", () => {
    restart();
    for (const terminal of ["task_failed", "task_cancelled", "budget_exceeded"] as const) {
      const s = reduceAll(7, [
        ev("task_created", { goal: "g" }),
        delta("half an ans"),
        ev(terminal, { error: "boom", reason: "stop", kind: "x", budget: "time" }),
      ]);
      expect(s.closed).toBe(true);
      expect(s.streaming).toBeNull();
      expect(s.finalAnswer).toBeNull();
      expect(texts(s.items)).toEqual([]);
      expect(s.items.some((i) => i.kind === "notice")).toBe(true);
    }
  });

  it("a subscriber joining mid-run gets the text so far, then the rest", () => {
    const events = run();
    // Replay up to the second turn, then the runtime's "text so far" as one delta.
    const s = reduceAll(7, [...events.slice(0, 11), delta("Done: "), delta("h.txt written.")]);
    expect(s.streaming).toBe("Done: h.txt written.");
  });

  it("adds the final answer from task_completed when the turn event was not seen", () => {
    restart();
    const s = reduceAll(7, [ev("task_completed", { final_answer: "42" })]);
    expect(texts(s.items)).toEqual(["42"]);
    expect(reduceAll(7, []).closed).toBe(false);
    expect(initialLive(7).streaming).toBeNull();
  });
});

describe("terminal-event rule", () => {
  it("lists exactly the four task-terminal events", () => {
    expect([...TERMINAL_EVENTS].sort()).toEqual(["budget_exceeded", "task_cancelled", "task_completed", "task_failed"]);
  });
  it("agent_completed is not terminal", () => {
    expect(isTerminalEvent("agent_completed")).toBe(false);
    expect(isTerminalEvent("approval_required")).toBe(false);
    for (const t of TERMINAL_EVENTS) expect(isTerminalEvent(t)).toBe(true);
  });
});

describe("history from entries", () => {
  const task: Task = {
    id: 7, session_id: 1, goal: "write a haiku", trigger: "chat", provider: null, follow_up_of: null,
    status: "completed", step_count: 2, prompt_tokens: 0, completion_tokens: 0, active_ms: 0, grants: [], mcp: [],
    final_answer: "Done: h.txt written.", error: null, created_at: "", started_at: null, finished_at: null,
    extra: { steps: 0, seconds: 0, tokens: 0, usd: 0 }, pause: null,
  };
  const entry = (id: number, kind: string, content: JsonObject, taskId = 7): Entry => ({
    id, session_id: 1, task_id: taskId, kind, content, created_at: "",
  });
  const entries = [
    entry(1, "user", { text: "write a haiku" }),
    entry(2, "assistant", {
      text: "Let me write it.",
      tool_calls: [{ id: "c1", name: "write_file", arguments: '{"path":"h.txt"}' }],
    }),
    entry(3, "tool_result", { call_id: "c1", text: "wrote h.txt", is_error: false }),
    entry(4, "assistant", { text: "Done: h.txt written.", tool_calls: [] }),
    entry(5, "user", { text: "another task" }, 8),
  ];

  it("draws the same transcript as the live run, the final answer once", () => {
    const live = reduceAll(7, run());
    const hist = historyItems(task, entries);
    const strip = (items: typeof hist) =>
      items.map((i) => (i.kind === "tool" ? { kind: i.kind, name: i.name, status: i.status, output: i.output } : { kind: i.kind, text: "text" in i ? i.text : "" }));
    expect(strip(hist)).toEqual(strip(live.items));
    expect(texts(hist).filter((t) => t === "Done: h.txt written.")).toHaveLength(1);
  });

  it("shows a failed task's error and never an unanswered call as done", () => {
    const failed = historyItems({ ...task, status: "failed", error: "model error" }, entries.slice(0, 2));
    expect(failed.find((i) => i.kind === "tool")).toMatchObject({ status: "failed" });
    expect(failed[failed.length - 1]).toMatchObject({ kind: "notice", tone: "error" });
  });
});

describe("inputs placed from the inbox", () => {
  const users = (items: { kind: string; text?: string }[]) =>
    items.filter((i) => i.kind === "user").map((i) => i.text);

  it("shows a run's goal once when the inbox started it, then the other placed inputs in order", () => {
    restart();
    const s = reduceAll(7, [
      ev("task_created", { goal: "and add a title", session_id: 1, trigger: "chat", follow_up_of: 6 }),
      ev("input_placed", { submission_id: 2, mode: "followUp", boundary: "final", text: "and add a title" }),
      ev("input_placed", { submission_id: 3, mode: "steer", boundary: "final", text: "make it rhyme" }),
      ev("task_started", { provider: "scripted:x", resumed: false }),
    ]);
    expect(users(s.items)).toEqual(["and add a title", "make it rhyme"]);
  });

  it("shows a steer placed after tool results where it entered the transcript", () => {
    const events = run();
    const at = events.findIndex((e) => e.type === "tool_call_completed") + 1;
    const steer = ev("input_placed", { submission_id: 4, mode: "steer", boundary: "post_tools", text: "shorter please" });
    let n = 0;
    const renumbered = [...events.slice(0, at), steer, ...events.slice(at)].map((e) =>
      e.sequence > 0 ? { ...e, sequence: ++n } : e,
    );
    const s = reduceAll(7, renumbered);
    const kinds = s.items.map((i) => i.kind);
    expect(users(s.items)).toEqual(["write a haiku", "shorter please"]);
    expect(kinds.indexOf("tool")).toBeLessThan(kinds.lastIndexOf("user"));
    expect(kinds.lastIndexOf("user")).toBeLessThan(kinds.lastIndexOf("assistant"));
  });
});
