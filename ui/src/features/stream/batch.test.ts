import { describe, expect, it } from "vitest";
import type { TaskEvent } from "../../api/generated/bindings";
import { FALLBACK_MS, frameBatcher, reduceBatch, type Scheduler } from "./batch";
import { initialLive, reduceAll } from "./reducer";
import { delta, ev, restart } from "./events.test-support";

function run(): TaskEvent[] {
  restart();
  return [
    ev("task_created", { goal: "stream", session_id: 1, trigger: "chat" }),
    ev("task_started", { provider: "scripted:x", resumed: false }),
    ev("model_turn_started", { step: 1 }),
    ...Array.from("Hello there.", (c) => delta(c)),
    ev("stream_reset", { text: "Hello" }, true),
    ...Array.from(" again.", (c) => delta(c)),
    ev("model_turn_completed", { step: 1, text: "Hello again.", tool_calls: [] }),
    ev("agent_completed", { final_answer: "Hello again." }),
    ev("task_completed", { final_answer: "Hello again." }),
    // After the terminal event: ignored, batched or not.
    delta("late"),
  ];
}

/** A scheduler driven by the test: frames and timers run when the test says so. */
function manual() {
  let frames: (() => void)[] = [];
  let timers: { fn: () => void; at: number }[] = [];
  let now = 0;
  const scheduler: Scheduler = {
    frame: (fn) => {
      frames.push(fn);
      return () => (frames = frames.filter((f) => f !== fn));
    },
    timeout: (fn, ms) => {
      const t = { fn, at: now + ms };
      timers.push(t);
      return () => (timers = timers.filter((x) => x !== t));
    },
  };
  return {
    scheduler,
    pendingFrames: () => frames.length,
    pendingTimers: () => timers.length,
    frame() {
      const due = frames;
      frames = [];
      for (const f of due) f();
    },
    advance(ms: number) {
      now += ms;
      const due = timers.filter((t) => t.at <= now);
      timers = timers.filter((t) => t.at > now);
      for (const t of due) t.fn();
    },
  };
}

describe("reduceBatch", () => {
  it("gives the same state as one event at a time, however the events are split", () => {
    const events = run();
    const expected = reduceAll(7, events);
    for (const size of [1, 2, 3, 5, 8, events.length]) {
      let s = initialLive(7);
      for (let i = 0; i < events.length; i += size) s = reduceBatch(s, events.slice(i, i + size));
      expect(s).toEqual(expected);
    }
    expect(expected.items.filter((i) => i.kind === "assistant").map((i) => i.kind === "assistant" && i.text)).toEqual([
      "Hello again.",
    ]);
    expect(expected.closed).toBe(true);
    expect(expected.streaming).toBeNull();
  });

  it("keeps the bubble's text through a batch of deltas and a reset", () => {
    const events = run();
    const s = reduceBatch(initialLive(7), events.slice(0, 3 + "Hello there.".length + 1 + 3));
    expect(s.streaming).toBe("Hello ag");
  });

  it("returns the same state for an empty batch", () => {
    const s = initialLive(7);
    expect(reduceBatch(s, [])).toBe(s);
  });
});

describe("frameBatcher", () => {
  it("hands over everything pushed before a frame in one call, in order", () => {
    const m = manual();
    const got: number[][] = [];
    const b = frameBatcher<number>((items) => got.push(items), m.scheduler);
    for (let i = 0; i < 10; i++) b.push(i);
    expect(got).toEqual([]);
    expect(m.pendingFrames()).toBe(1);
    m.frame();
    expect(got).toEqual([[0, 1, 2, 3, 4, 5, 6, 7, 8, 9]]);
    // The fallback timer of that batch was cancelled with it.
    expect(m.pendingTimers()).toBe(0);
    b.push(10);
    b.push(11);
    m.frame();
    expect(got).toEqual([[0, 1, 2, 3, 4, 5, 6, 7, 8, 9], [10, 11]]);
  });

  it("does not deliver or schedule anything when nothing was pushed", () => {
    const m = manual();
    const got: number[][] = [];
    frameBatcher<number>((items) => got.push(items), m.scheduler);
    m.frame();
    m.advance(FALLBACK_MS * 2);
    expect(got).toEqual([]);
    expect(m.pendingFrames()).toBe(0);
  });

  it("flushes on a timer when no frame comes (a hidden window)", () => {
    const m = manual();
    const got: string[][] = [];
    const b = frameBatcher<string>((items) => got.push(items), m.scheduler);
    b.push("a");
    b.push("b");
    m.advance(FALLBACK_MS - 1);
    expect(got).toEqual([]);
    m.advance(1);
    expect(got).toEqual([["a", "b"]]);
    expect(m.pendingFrames()).toBe(0);
  });

  it("flush() hands over at once; dispose() drops the queue and stops", () => {
    const m = manual();
    const got: string[][] = [];
    const b = frameBatcher<string>((items) => got.push(items), m.scheduler);
    b.push("a");
    b.flush();
    expect(got).toEqual([["a"]]);
    expect(m.pendingFrames() + m.pendingTimers()).toBe(0);
    b.push("b");
    b.dispose();
    expect(m.pendingFrames() + m.pendingTimers()).toBe(0);
    b.push("c");
    m.frame();
    m.advance(FALLBACK_MS);
    expect(got).toEqual([["a"]]);
  });

  it("feeds the reducer one batch per frame with the result of one event at a time", () => {
    const m = manual();
    const events = run();
    let state = initialLive(7);
    let renders = 0;
    const b = frameBatcher<TaskEvent>((batch) => {
      state = reduceBatch(state, batch);
      renders++;
    }, m.scheduler);
    // 200 deltas per second against 60 frames per second: about 3 events per frame.
    events.forEach((e, i) => {
      b.push(e);
      if (i % 3 === 2) m.frame();
    });
    m.frame();
    expect(state).toEqual(reduceAll(7, events));
    expect(renders).toBe(Math.ceil(events.length / 3));
  });
});
