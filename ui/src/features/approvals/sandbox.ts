// The sandbox line an approval and Settings show (issue 14): "sandboxed: …", or in red
// "NOT sandboxed: <reason>". The runtime writes the line; the window only tells the two
// apart, by the prefix the runtime promises.
import type { TaskEvent } from "../../api/generated/bindings";

const UNSANDBOXED = "NOT sandboxed";

export function isUnsandboxed(line: string): boolean {
  return line.trimStart().startsWith(UNSANDBOXED);
}

/** The line of call `callId` in a task's events: its `approval_required`'s, or null. */
export function sandboxLineOf(events: TaskEvent[], callId: string): string | null {
  for (let i = events.length - 1; i >= 0; i--) {
    const ev = events[i];
    if (ev.type === "approval_required" && ev.payload.call_id === callId) return ev.payload.sandbox ?? null;
  }
  return null;
}
