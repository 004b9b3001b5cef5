// The live reducer: folds one task's events (replayed from the store, then live) into the
// items a session view draws. Pure: no IPC, no DOM; tested in reducer.test.ts.
//
// Rules (DESIGN §4):
// - `assistant_delta` / `stream_reset` (sequence 0) only touch the streaming bubble;
//   `stream_reset` replaces it with its text.
// - `model_turn_completed` turns the bubble into the turn's persisted text: the bubble is
//   dropped and the completed text is appended once, so the answer is never shown twice.
// - A persisted event at or below the last sequence seen is a duplicate and ignored.
// - The stream closes only on a terminal event; `agent_completed` records the final answer
//   but keeps it open. A bubble left when a run ends (failed, cancelled) is discarded: a
//   half answer is never presented as the answer.
import type { Effect, TaskEvent, TaskStatus, ToolCall } from "../../api/types";
import type { Item, PendingApproval, ToolItem, ToolStatus } from "./items";
import { isTerminalEvent } from "./terminal";

export interface LiveState {
  taskId: number;
  items: Item[];
  /** The answer being generated, or null when no model turn is streaming. */
  streaming: string | null;
  lastSequence: number;
  status: TaskStatus;
  finalAnswer: string | null;
  approval: PendingApproval | null;
  /** True after a terminal event: nothing changes any more. */
  closed: boolean;
  /** The goal shown from `task_created`, until an `input_placed` of the same text confirms it. */
  goalShown: string | null;
}

export function initialLive(taskId: number): LiveState {
  return {
    taskId,
    items: [],
    streaming: null,
    lastSequence: 0,
    status: "queued",
    finalAnswer: null,
    approval: null,
    closed: false,
    goalShown: null,
  };
}

const str = (v: unknown): string => (typeof v === "string" ? v : "");

export function reduceLive(state: LiveState, ev: TaskEvent): LiveState {
  if (state.closed) return state;
  if (ev.sequence > 0) {
    if (ev.sequence <= state.lastSequence) return state;
    state = { ...state, lastSequence: ev.sequence };
  }
  const p = ev.payload ?? {};
  const key = (suffix: string) => `${state.taskId}:${ev.sequence}:${suffix}`;
  switch (ev.type) {
    case "assistant_delta":
      return { ...state, streaming: (state.streaming ?? "") + str(p.text) };
    case "stream_reset":
      return { ...state, streaming: str(p.text) };
    case "task_created":
      return {
        ...state,
        items: [...state.items, { kind: "user", key: key("u"), text: str(p.goal) }],
        goalShown: str(p.goal),
      };
    case "input_placed": {
      // A run started by the inbox is created with its first input as the goal, then
      // records each placed input: the first one is the goal already shown.
      const text = str(p.text);
      if (p.boundary === "final" && state.goalShown === text) return { ...state, goalShown: null };
      return { ...state, items: [...state.items, { kind: "user", key: key("u"), text }], goalShown: null };
    }
    case "task_started":
      return { ...state, status: "running" };
    case "model_turn_completed": {
      const items = [...state.items];
      const text = str(p.text);
      if (text.trim()) items.push({ kind: "assistant", key: key("a"), text });
      const calls = Array.isArray(p.tool_calls) ? (p.tool_calls as ToolCall[]) : [];
      for (const c of calls) {
        items.push({
          kind: "tool",
          key: key(`t${c.id}`),
          callId: c.id,
          name: c.name,
          arguments: c.arguments,
          status: "planned",
          output: null,
        });
      }
      return { ...state, items, streaming: null };
    }
    case "tool_call_started":
      return withTool(state, str(p.call_id), { status: "running" }, p);
    case "tool_call_completed":
      return withTool(state, str(p.call_id), { status: "done", output: str(p.output) }, p);
    case "tool_call_failed": {
      const status: ToolStatus = p.kind === "rejected" ? "rejected" : "failed";
      return withTool(state, str(p.call_id), { status, output: str(p.error) }, p);
    }
    case "approval_required": {
      const approval: PendingApproval = {
        approvalId: Number(p.approval_id),
        taskId: state.taskId,
        callId: str(p.call_id),
        name: str(p.name),
        arguments: (p.arguments as Record<string, unknown>) ?? {},
        capability: (p.capability as string | null) ?? null,
        effect: (p.effect as Effect) ?? { kind: "none" },
        reason: str(p.reason),
      };
      const next = withTool(state, approval.callId, { status: "waiting_approval" }, p);
      return { ...next, approval, status: "waiting_approval" };
    }
    case "approval_resolved": {
      const approved = p.approved === true;
      const next = withTool(state, str(p.call_id), { status: approved ? "running" : "rejected" }, p);
      return { ...next, approval: null, status: "running" };
    }
    case "agent_completed":
      return { ...state, finalAnswer: str(p.final_answer), streaming: null };
    default:
      if (isTerminalEvent(ev.type)) return closeOn(state, ev);
      return state;
  }
}

/** Updates the card of `callId`, creating it when the event is the first we see of it. */
function withTool(
  state: LiveState,
  callId: string,
  patch: Partial<ToolItem>,
  p: Record<string, unknown>,
): LiveState {
  const at = state.items.findIndex((i) => i.kind === "tool" && i.callId === callId);
  const items = [...state.items];
  if (at >= 0) {
    items[at] = { ...(items[at] as ToolItem), ...patch };
  } else {
    const args = typeof p.arguments === "string" ? p.arguments : JSON.stringify(p.arguments ?? {});
    items.push({
      kind: "tool",
      key: `${state.taskId}:tool:${callId}`,
      callId,
      name: str(p.name),
      arguments: args,
      status: "planned",
      output: null,
      ...patch,
    });
  }
  return { ...state, items };
}

function closeOn(state: LiveState, ev: TaskEvent): LiveState {
  const p = ev.payload ?? {};
  const items = [...state.items];
  let status: TaskStatus;
  switch (ev.type) {
    case "task_completed": {
      status = "completed";
      const answer = str(p.final_answer) || state.finalAnswer || "";
      const last = [...items].reverse().find((i) => i.kind === "assistant");
      // The last turn's text is the answer; add it only if the turn event was never seen.
      if (answer && (!last || last.kind !== "assistant" || last.text !== answer)) {
        items.push({ kind: "assistant", key: `${state.taskId}:final`, text: answer });
      }
      break;
    }
    case "task_failed":
      status = "failed";
      items.push({ kind: "notice", key: `${state.taskId}:end`, tone: "error", text: `Failed: ${str(p.error)}` });
      break;
    case "task_cancelled":
      status = "cancelled";
      items.push({ kind: "notice", key: `${state.taskId}:end`, tone: "info", text: `Cancelled: ${str(p.reason)}` });
      break;
    default:
      status = "budget_exceeded";
      items.push({ kind: "notice", key: `${state.taskId}:end`, tone: "error", text: `Budget exceeded: ${str(p.reason)}` });
  }
  const final = status === "completed" ? state.finalAnswer ?? str(p.final_answer) : null;
  return { ...state, items, streaming: null, approval: null, status, finalAnswer: final, closed: true };
}

export function reduceAll(taskId: number, events: TaskEvent[]): LiveState {
  return events.reduce(reduceLive, initialLive(taskId));
}
