// Generated from pocketpilot_core::TERMINAL_EVENTS by src-tauri/shell/wire_tests.rs.
// Do not edit: run `POCKETPILOT_UPDATE_BINDINGS=1 cargo test -p pocketpilot wire`.
export const TERMINAL_EVENTS = [
  "task_completed",
  "task_failed",
  "task_cancelled",
  "budget_exceeded",
] as const;
