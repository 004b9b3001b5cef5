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
import type { TaskEvent, TaskStatus } from "../../api/generated/bindings";
import { objectOf } from "../../api/json";
import { isTerminalEvent } from "./terminal";
import { addedOn } from "../approvals/commandOffer";
import type { Item, PendingApproval, ToolItem, ToolStatus } from "./items";
import { markFromEvent } from "../context/marks";

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
  /** The model turns begun so far (the step the run is at). */
  steps: number;
  /** Tokens the model turns used so far (prompt + completion). */
  tokens: number;
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
    steps: 0,
    tokens: 0,
  };
}

export function reduceLive(state: LiveState, ev: TaskEvent): LiveState {
  if (state.closed) return state;
  if (ev.sequence > 0) {
    if (ev.sequence <= state.lastSequence) return state;
    state = { ...state, lastSequence: ev.sequence };
  }
  const key = (suffix: string) => `${state.taskId}:${ev.sequence}:${suffix}`;
  // Each case reads its event's own payload type (the generated `RuntimeEvent` union).
  switch (ev.type) {
    case "assistant_delta":
      return { ...state, streaming: (state.streaming ?? "") + ev.payload.text };
    case "stream_reset":
      return { ...state, streaming: ev.payload.text };
    case "task_created":
      return {
        ...state,
        items: [...state.items, { kind: "user", key: key("u"), text: ev.payload.goal }],
        goalShown: ev.payload.goal,
      };
    case "input_placed": {
      // A run started by the inbox is created with its first input as the goal, then
      // records each placed input: the first one is the goal already shown.
      const { text, boundary } = ev.payload;
      if (boundary === "final" && state.goalShown === text) return { ...state, goalShown: null };
      return { ...state, items: [...state.items, { kind: "user", key: key("u"), text }], goalShown: null };
    }
    case "task_started":
      return { ...state, status: "running" };
    case "model_turn_started":
      return { ...state, steps: Math.max(state.steps, ev.payload.step) };
    case "model_turn_completed": {
      const items = [...state.items];
      const { text } = ev.payload;
      if (text.trim()) items.push({ kind: "assistant", key: key("a"), text });
      for (const c of ev.payload.tool_calls ?? []) {
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
      const u = ev.payload.usage;
      const tokens = state.tokens + (u ? u.prompt_tokens + u.completion_tokens : 0);
      return { ...state, items, streaming: null, tokens, steps: Math.max(state.steps, ev.payload.step) };
    }
    case "allowed_by_rule": {
      const p = ev.payload;
      const allowedBy = p.rules.map((r) => `\`${r.rule}\`, ${addedOn(r.created_at)}`).join("; ");
      return withTool(state, p.call_id, { allowedBy }, "run_command", JSON.stringify({ command: p.command }));
    }
    case "tool_call_started": {
      const p = ev.payload;
      return withTool(state, p.call_id, { status: "running", startedAt: ev.at }, p.name, p.arguments);
    }
    case "tool_call_completed": {
      const p = ev.payload;
      return withTool(state, p.call_id, { status: "done", output: p.output }, p.name, "{}");
    }
    case "tool_call_failed": {
      const p = ev.payload;
      const status: ToolStatus = p.kind === "rejected" ? "rejected" : "failed";
      return withTool(state, p.call_id, { status, output: p.error }, p.name, "{}");
    }
    case "approval_required": {
      const p = ev.payload;
      const approval: PendingApproval = {
        approvalId: p.approval_id ?? 0,
        taskId: state.taskId,
        callId: p.call_id,
        name: p.name,
        arguments: objectOf(p.arguments) ?? {},
        capability: p.capability ?? null,
        effect: p.effect ?? { kind: "none" },
        reason: p.reason,
        sandbox: p.sandbox ?? null,
      };
      const patch: Partial<ToolItem> = { status: "waiting_approval" };
      if (approval.effect.kind === "diff") patch.diff = approval.effect.diff;
      const next = withTool(state, approval.callId, patch, p.name, JSON.stringify(p.arguments ?? {}));
      return { ...next, approval, status: "waiting_approval" };
    }
    case "context_compacted":
      // One the person asked for comes after the run and sits between tasks.
      if (ev.payload.cause === "manual") return state;
      return { ...state, items: [...state.items, { kind: "compaction", key: key("c"), mark: markFromEvent(ev.payload) }] };
    case "approval_resolved": {
      const approved = ev.payload.approved === true;
      const patch: Partial<ToolItem> = approved ? { status: "running", startedAt: ev.at } : { status: "rejected" };
      const next = withTool(state, ev.payload.call_id, patch, "", "{}");
      return { ...next, approval: null, status: "running" };
    }
    case "agent_completed":
      return { ...state, finalAnswer: ev.payload.final_answer, streaming: null };
    // Issue 19: the run stopped for the person (a budget, or repetition), then went on.
    case "run_paused":
      return { ...state, streaming: null, status: "paused" };
    case "run_continued":
      return { ...state, status: "running" };
    default:
      if (isTerminalEvent(ev.type)) return closeOn(state, ev);
      return state;
  }
}

/** Updates the card of `callId`, creating it (with `name` and `args`) when the event is
 * the first we see of it. */
function withTool(state: LiveState, callId: string, patch: Partial<ToolItem>, name: string, args: string): LiveState {
  const at = state.items.findIndex((i) => i.kind === "tool" && i.callId === callId);
  const items = [...state.items];
  const found = at >= 0 ? items[at] : undefined;
  if (found && found.kind === "tool") {
    items[at] = { ...found, ...patch };
  } else {
    items.push({
      kind: "tool",
      key: `${state.taskId}:tool:${callId}`,
      callId,
      name,
      arguments: args,
      status: "planned",
      output: null,
      ...patch,
    });
  }
  return { ...state, items };
}

function closeOn(state: LiveState, ev: TaskEvent): LiveState {
  const items = [...state.items];
  let status: TaskStatus;
  let answered: string | null = null;
  switch (ev.type) {
    case "task_completed": {
      status = "completed";
      answered = ev.payload.final_answer ?? "";
      const answer = answered || state.finalAnswer || "";
      const last = [...items].reverse().find((i) => i.kind === "assistant");
      // The last turn's text is the answer; add it only if the turn event was never seen.
      if (answer && (!last || last.kind !== "assistant" || last.text !== answer)) {
        items.push({ kind: "assistant", key: `${state.taskId}:final`, text: answer });
      }
      break;
    }
    case "task_failed": {
      status = "failed";
      const p = ev.payload;
      items.push({
        kind: "notice",
        key: `${state.taskId}:end`,
        tone: "error",
        text: p.summary ?? "The task failed.",
        detail: p.error,
        errorKind: p.kind,
        failed: true,
      });
      break;
    }
    case "task_cancelled":
      status = "cancelled";
      items.push({ kind: "notice", key: `${state.taskId}:end`, tone: "info", text: `Cancelled: ${ev.payload.reason ?? ""}` });
      break;
    case "budget_exceeded":
      status = "budget_exceeded";
      items.push({ kind: "notice", key: `${state.taskId}:end`, tone: "error", text: `Budget exceeded: ${ev.payload.reason ?? ""}` });
      break;
    default:
      return state;
  }
  const final = status === "completed" ? state.finalAnswer ?? answered : null;
  return { ...state, items, streaming: null, approval: null, status, finalAnswer: final, closed: true };
}

export function reduceAll(taskId: number, events: TaskEvent[]): LiveState {
  return events.reduce(reduceLive, initialLive(taskId));
}
