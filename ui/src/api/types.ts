// The wire types of the desktop shell's commands, mirroring the runtime's serde output
// (src-tauri/runtime/src/store/*.rs, service.rs, event.rs).
//
// Hand-written until the runtime's types derive `specta::Type`; then this file is replaced
// by the generated bindings. Field names are the Rust ones (snake_case).

export type TaskStatus =
  | "queued"
  | "running"
  | "waiting_approval"
  | "completed"
  | "failed"
  | "cancelled"
  | "budget_exceeded";

export interface Session {
  id: number;
  title: string;
  workspace: string;
  steering_mode: string;
  follow_up_mode: string;
  last_failure: string | null;
  created_at: string;
  updated_at: string;
}

export interface Task {
  id: number;
  session_id: number;
  goal: string;
  trigger: string;
  provider: string | null;
  follow_up_of: number | null;
  status: TaskStatus;
  step_count: number;
  prompt_tokens: number;
  completion_tokens: number;
  active_ms: number;
  grants: string[];
  final_answer: string | null;
  error: string | null;
  created_at: string;
  started_at: string | null;
  finished_at: string | null;
}

/** A transcript entry: `user`, `assistant`, `tool_result`, `system`, `reset`, `app.*`. */
export interface Entry {
  id: number;
  session_id: number;
  task_id: number | null;
  kind: string;
  content: EntryContent;
  created_at: string;
}

export interface EntryContent {
  text?: string;
  tool_calls?: ToolCall[];
  call_id?: string;
  is_error?: boolean;
  [key: string]: unknown;
}

/** A model's tool call; `arguments` is the raw JSON text the model produced. */
export interface ToolCall {
  id: string;
  name: string;
  arguments: string;
}

/** A persisted event (sequence ≥ 1) or a live-only one (sequence 0). */
export interface TaskEvent {
  task_id: number;
  sequence: number;
  type: string;
  payload: Record<string, unknown>;
  at: string;
}

export type Effect =
  | { kind: "none" }
  | { kind: "diff"; path: string; diff: string }
  | { kind: "delete"; path: string }
  | { kind: "command"; command: string; cwd: string }
  | { kind: "fetch"; url: string };

export interface Approval {
  id: number;
  task_id: number;
  call_id: string;
  tool: string;
  capability: string | null;
  arguments: Record<string, unknown>;
  effect: Effect;
  reason: string;
  step: number;
  status: string;
  decision_note: string | null;
  edited_args: Record<string, unknown> | null;
  session_grant: boolean;
  resolved_by: string | null;
  created_at: string;
  resolved_at: string | null;
}

/** What the window sends to start a task (the shell's `ChatTask`). */
export interface ChatTask {
  goal: string;
  workspace: string | null;
  session_id: number | null;
  follow_up_of: number | null;
}

export interface ApprovalAnswer {
  approve: boolean;
  edited_arguments: Record<string, unknown> | null;
  session_grant: boolean;
  note: string | null;
  by: string;
}

/** What a command rejects with: a stable kind to branch on and a message to show. */
export interface CommandError {
  kind: string;
  message: string;
}
