// Task events for the stream tests: persisted ones numbered in order, live deltas with
// sequence 0, as the runtime sends them.
import type { TaskEvent } from "../../api/types";

let seq = 0;

/** Starts the numbering again (a new task's events). */
export function restart(): void {
  seq = 0;
}

export const ev = (type: string, payload: Record<string, unknown> = {}, live = false): TaskEvent => ({
  task_id: 7,
  sequence: live ? 0 : ++seq,
  type: type as TaskEvent["type"],
  payload,
  at: "2026-11-30T00:00:00.000Z",
});

export const delta = (text: string) => ev("assistant_delta", { text }, true);
