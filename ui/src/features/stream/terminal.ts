// The terminal-event rule (DESIGN §4): a task's stream closes only on one of these events,
// never on `agent_completed` (the service still records and moves the task after it).
// The list is generated from `pocketpilot_runtime::TERMINAL_EVENTS`
// (src-tauri/shell/wire_tests.rs fails when it is stale).
import { TERMINAL_EVENTS } from "../../api/generated/terminal";

export { TERMINAL_EVENTS };

export type TerminalEvent = (typeof TERMINAL_EVENTS)[number];

export function isTerminalEvent(type: string): type is TerminalEvent {
  return (TERMINAL_EVENTS as readonly string[]).includes(type);
}

/** Task statuses after which a task never changes again. */
export function isTerminalStatus(status: string): boolean {
  return ["completed", "failed", "cancelled", "budget_exceeded"].includes(status);
}
