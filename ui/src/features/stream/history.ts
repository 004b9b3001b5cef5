// History: a finished task's items read back from the store's entries (the record), so a
// reload shows each final answer exactly once and never a streamed fragment.
import type { Entry, Task, TaskFailure } from "../../api/generated/bindings";
import { flagOf, textOf, toolCallsOf } from "../../api/json";
import type { Item } from "./items";
import { markFromEntry } from "../context/marks";

/** `failure`: the task's recorded error (kind, sentence, detail), when it failed. */
export function historyItems(task: Task, entries: Entry[], failure?: TaskFailure): Item[] {
  const items: Item[] = [];
  const cards = new Map<string, number>();
  for (const e of entries) {
    if (e.task_id !== task.id) continue;
    const key = `e${e.id}`;
    const text = textOf(e.content, "text") ?? "";
    switch (e.kind) {
      case "user":
        items.push({ kind: "user", key, text, entryId: e.id, rewound: e.rewound_by != null });
        break;
      case "assistant": {
        if (text.trim()) items.push({ kind: "assistant", key, text, rewound: e.rewound_by != null });
        for (const c of toolCallsOf(e.content)) {
          cards.set(c.id, items.length);
          items.push({
            kind: "tool",
            key: `${key}:${c.id}`,
            callId: c.id,
            name: c.name,
            arguments: c.arguments,
            status: task.status === "waiting_approval" ? "waiting_approval" : "planned",
            output: null,
          });
        }
        break;
      }
      case "tool_result": {
        const at = cards.get(textOf(e.content, "call_id") ?? "");
        if (at === undefined) break;
        const card = items[at];
        if (card.kind !== "tool") break;
        // The entry does not say why a call failed (a rejection reads as a failure here;
        // the live view and the task details tell them apart by the event's kind).
        items[at] = { ...card, status: flagOf(e.content, "is_error") ? "failed" : "done", output: text };
        break;
      }
      case "compaction": {
        // One the person asked for sits between tasks (the session's context marks).
        const mark = markFromEntry(e);
        if (mark) items.push({ kind: "compaction", key, mark });
        break;
      }
      default:
        if (e.kind.startsWith("app.") && text) items.push({ kind: "notice", key, tone: "info", text });
    }
  }
  // A call the run never got to answer (cancelled, failed) did not run.
  if (task.status !== "waiting_approval" && task.status !== "running") {
    for (let i = 0; i < items.length; i++) {
      const it = items[i];
      if (it.kind === "tool" && it.status === "planned") items[i] = { ...it, status: "failed", output: "did not run" };
    }
  }
  if (task.status === "failed" && failure) {
    // As the live view said it: the runtime's sentence for the error's kind, the detail behind it.
    items.push({
      kind: "notice",
      key: `t${task.id}:end`,
      tone: "error",
      text: failure.summary,
      detail: failure.error,
      errorKind: failure.kind,
      failed: true,
    });
  } else if (task.status === "failed" || task.status === "budget_exceeded") {
    // No recorded failure to read (a store from before it was kept): the sentence stays general.
    const text = task.status === "failed" ? "The task failed." : "The task ran out of budget.";
    items.push({ kind: "notice", key: `t${task.id}:end`, tone: "error", text, detail: task.error ?? task.status, failed: true });
  } else if (task.status === "cancelled") {
    items.push({ kind: "notice", key: `t${task.id}:end`, tone: "info", text: `Cancelled: ${task.error ?? ""}` });
  }
  return items;
}
