// The UI's view of the wire. The shapes come from the generated bindings
// (generated/bindings.ts, exported from src-tauri/shell/wire.rs by tauri-specta); the JSON
// fields the shell passes through untyped (`Value`) are narrowed here to what the UI reads.
import type * as Wire from "./generated/bindings";

export type {
  AboutInfo,
  Admitted,
  ChatTask,
  CommandError,
  CreatedWebhook,
  DesktopSettings,
  Limits,
  McpServer,
  NewMcpServer,
  NewSchedule,
  NewWatch,
  NewWebhook,
  PolicyRules,
  ProviderForm,
  SayInput,
  Schedule,
  Session,
  Setup,
  Task,
  TaskStatus,
  TriggerStatus,
  Watch,
  Webhook,
  WhenBusy,
} from "./generated/bindings";

/** A transcript entry: `user`, `assistant`, `tool_result`, `system`, `reset`, `app.*`. */
export type Entry = Omit<Wire.Entry, "content"> & { content: EntryContent };

/** A session's newest tasks (oldest first), their entries, and whether older tasks exist. */
export type SessionHistory = Omit<Wire.SessionHistory, "entries"> & { entries: Entry[] };

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
export type TaskEvent = Omit<Wire.TaskEvent, "payload"> & { payload: Record<string, unknown> };

/** The tool's `Effect` (src-tauri/tools/src/tool.rs), carried as JSON by approvals. */
export type Effect =
  | { kind: "none" }
  | { kind: "diff"; path: string; diff: string }
  | { kind: "delete"; path: string }
  | { kind: "command"; command: string; cwd: string }
  | { kind: "fetch"; url: string };

export type Approval = Omit<Wire.Approval, "arguments" | "effect" | "edited_args"> & {
  arguments: Record<string, unknown>;
  effect: Effect;
  edited_args: Record<string, unknown> | null;
};

/** A queued (or settled) inbox item; `content.text` is what the person said. */
export type Submission = Omit<Wire.Submission, "content"> & { content: { text?: string; [key: string]: unknown } };

export type ApprovalAnswer = Omit<Wire.ApprovalAnswer, "edited_arguments"> & {
  edited_arguments: Record<string, unknown> | null;
};
