import { describe, expect, it } from "vitest";
import type { Plan } from "../../api/generated/bindings";
import { currentPlan, editedPlan, lines, progress } from "./plan";

const plan = (id: number, done: number[] = []): Plan => ({
  id,
  session_id: 1,
  task_id: id,
  status: "approved",
  source: "tool",
  content: { steps: ["a", "b", "c"], files: ["x.txt"], commands: [] },
  done,
  edited: false,
  run_task_id: null,
  created_at: "2025-12-02T10:00:00Z",
  decided_at: null,
});

describe("plan card", () => {
  it("shows the newest plan", () => {
    expect(currentPlan([])).toBeNull();
    expect(currentPlan([plan(1), plan(2)])?.id).toBe(2);
  });
  it("reads one item per non-empty line", () => {
    expect(lines(" a \n\n b\n")).toEqual(["a", "b"]);
    expect(editedPlan("one\ntwo", "f.txt\n", "")).toEqual({ steps: ["one", "two"], files: ["f.txt"], commands: [] });
    expect(editedPlan(" \n", "f.txt", "make")).toBeNull();
  });
  it("counts the steps done within the plan", () => {
    expect(progress(plan(1, [2, 1, 9]))).toBe("2 of 3 steps done");
  });
});
