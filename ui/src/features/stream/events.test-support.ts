// Task events for the stream tests: persisted ones numbered in order, live deltas with
// sequence 0, as the runtime sends them.
import type { TaskEvent } from "../../api/generated/bindings";

let seq = 0;

/** Starts the numbering again (a new task's events). */
export function restart(): void {
  seq = 0;
}

/** An event of `type` with the payload fields a test names (the reducer reads only those;
 * the rest of the generated payload type is left out on purpose, hence the cast). */
export const ev = (type: TaskEvent["type"], payload: Record<string, unknown> = {}, live = false): TaskEvent =>
  ({
    task_id: 7,
    sequence: live ? 0 : ++seq,
    type,
    payload,
    at: "2026-11-30T00:00:00.000Z",
  }) as TaskEvent;

export const delta = (text: string) => ev("assistant_delta", { text }, true);
