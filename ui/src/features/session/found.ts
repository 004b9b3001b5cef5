// A search hit opens its session at one entry: the transcript item that shows it.
import type { Entry } from "../../api/generated/bindings";
import { textOf, toolCallsOf } from "../../api/json";

/** The key of the item drawing entry `id` (a tool result is drawn in its call's card);
 * `null` when that entry is not among `entries` (an older task not loaded yet). */
export function itemKeyOf(entries: Entry[], id: number): string | null {
  const at = entries.findIndex((e) => e.id === id);
  if (at < 0) return null;
  const e = entries[at];
  if (e.kind !== "tool_result") return `e${id}`;
  const call = textOf(e.content, "call_id");
  for (let i = at - 1; i >= 0; i--) {
    const a = entries[i];
    if (a.kind === "assistant" && toolCallsOf(a.content).some((c) => c.id === call)) return `e${a.id}:${call}`;
  }
  return null;
}
