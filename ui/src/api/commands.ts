// The only module that talks to the shell. Components call these functions, never
// `invoke` directly. Command names and argument names match src-tauri/shell/commands.rs
// (Tauri maps the Rust snake_case arguments to camelCase keys).
import { Channel, invoke } from "@tauri-apps/api/core";
import type {
  Approval,
  ApprovalAnswer,
  ChatTask,
  CommandError,
  Entry,
  Session,
  Task,
  TaskEvent,
} from "./types";

export const listSessions = () => invoke<Session[]>("list_sessions");

export const sessionTasks = (sessionId: number) => invoke<Task[]>("session_tasks", { sessionId });

export const sessionEntries = (sessionId: number) => invoke<Entry[]>("session_entries", { sessionId });

export const taskEvents = (taskId: number) => invoke<TaskEvent[]>("task_events", { taskId });

export const pendingApprovals = () => invoke<Approval[]>("pending_approvals");

export const cancelTask = (taskId: number) => invoke<void>("cancel_task", { taskId });

/** Creates and starts a task; resolves with its id before the model is asked anything. */
export function createTask(goal: string, target: { sessionId: number } | { workspace: string }): Promise<number> {
  const task: ChatTask = {
    goal,
    workspace: "workspace" in target ? target.workspace : null,
    session_id: "sessionId" in target ? target.sessionId : null,
    follow_up_of: null,
  };
  return invoke<number>("create_task", { task });
}

export function resolveApproval(approvalId: number, answer: Omit<ApprovalAnswer, "by">): Promise<number> {
  return invoke<number>("resolve_approval", { approvalId, answer: { ...answer, by: "window" } });
}

/**
 * Streams a task's events: the persisted ones after `afterSequence`, then live ones
 * (deltas coalesced by the runtime) until a terminal event. Returns a function that stops
 * delivering to `onEvent`.
 */
export async function subscribeTask(
  taskId: number,
  afterSequence: number,
  onEvent: (ev: TaskEvent) => void,
): Promise<() => void> {
  let active = true;
  const channel = new Channel<TaskEvent>();
  channel.onmessage = (ev) => {
    if (active) onEvent(ev);
  };
  await invoke<void>("subscribe_task", { taskId, afterSequence, onEvent: channel });
  return () => {
    active = false;
  };
}

/** The message of a rejected command, whatever shape the rejection has. */
export function errorMessage(e: unknown): string {
  if (e && typeof e === "object" && "message" in e) return String((e as CommandError).message);
  return String(e);
}

export const getTask = (taskId: number) => invoke<Task>("get_task", { taskId });

/** The native folder picker; null when the person cancels. */
export async function pickFolder(): Promise<string | null> {
  const { open } = await import("@tauri-apps/plugin-dialog");
  const picked = await open({ directory: true, multiple: false, title: "Choose a workspace folder" });
  return typeof picked === "string" ? picked : null;
}
