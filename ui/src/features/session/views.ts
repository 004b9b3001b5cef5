// Which items draw each task of a session view. Pure: tested in views.test.ts.
//
// A task is drawn from its live reducer while its run is open, and from the store's history
// (items that carry their entry ids, so the person can rewind to, edit or regenerate from
// them) once the run has ended. The live view stays up after its terminal event until the
// store says the task ended too (the re-read after a run is on its way): switching earlier
// would draw a history that does not hold the last answer yet. The two are never mixed for
// one task, so no text is shown twice; what only the live run saw of a tool call (the diff
// it asked approval for, the rule that allowed it, a rejection) stays on its card, and the
// sentence it ended with stays as it was.
import type { Task } from "../../api/generated/bindings";
import type { Item, ToolItem } from "../stream/items";
import type { LiveState } from "../stream/reducer";
import { isTerminalStatus } from "../stream/terminal";

export interface TaskView {
  task: Task;
  items: Item[];
  streaming: string | null;
  live: boolean;
  /** The step the run is at and the tokens it used (live: from its events). */
  steps: number;
  tokens: number;
}

/** Whether `task` is drawn from its live state: while the run is open, and after it closed
 *  until the store's row says it ended. */
export function drawnLive(task: Task, live: LiveState | undefined): boolean {
  return live !== undefined && (!live.closed || !isTerminalStatus(task.status));
}

/** The history items of a task the view watched live, with what only the live run saw of
 *  each tool call kept on its card. */
export function handOver(live: Item[], history: Item[]): Item[] {
  const seen = new Map<string, ToolItem>();
  for (const i of live) if (i.kind === "tool") seen.set(i.callId, i);
  let changed = false;
  const items = history.map((i) => {
    if (i.kind !== "tool") return i;
    const l = seen.get(i.callId);
    if (!l) return i;
    const extra: Partial<ToolItem> = {};
    if (l.diff !== undefined && i.diff === undefined) extra.diff = l.diff;
    if (l.allowedBy !== undefined && i.allowedBy === undefined) extra.allowedBy = l.allowedBy;
    // The store records a rejection as a failed result; the live run knew which it was.
    if (l.status === "rejected" && i.status === "failed") extra.status = "rejected";
    if (Object.keys(extra).length === 0) return i;
    changed = true;
    return { ...i, ...extra };
  });
  // How the run ended, as the live run said it (the event's reason; the store words some
  // endings more generally): the sentence the person read does not change under them.
  const [end, ended] = [live[live.length - 1], items[items.length - 1]];
  if (end?.kind === "notice" && ended?.kind === "notice" && !sameNotice(end, ended)) {
    items[items.length - 1] = { ...end, key: ended.key };
    changed = true;
  }
  return changed ? items : history;
}

function sameNotice(a: Item & { kind: "notice" }, b: Item & { kind: "notice" }): boolean {
  return a.text === b.text && a.detail === b.detail && a.tone === b.tone && a.errorKind === b.errorKind && a.failed === b.failed;
}

/** `handOver` that answers the same array for the same inputs, so a task handed over is
 *  not drawn again each time another task of the view re-renders. */
export function handOverCache(): (taskId: number, live: Item[], history: Item[]) => Item[] {
  const last = new Map<number, { live: Item[]; history: Item[]; items: Item[] }>();
  return (taskId, live, history) => {
    const hit = last.get(taskId);
    if (hit && hit.live === live && hit.history === history) return hit.items;
    const items = handOver(live, history);
    last.set(taskId, { live, history, items });
    return items;
  };
}

/** One view per task of the store's list, then one per live task the list does not have
 *  yet (a task created from this view may be live before the list is read again). */
export function sessionViews(
  sessionId: number,
  tasks: Task[],
  live: Record<number, LiveState>,
  history: Map<number, Item[]>,
  handed: (taskId: number, live: Item[], history: Item[]) => Item[] = (_, l, h) => handOver(l, h),
): TaskView[] {
  const views: TaskView[] = tasks.map((task) => {
    const l = live[task.id];
    if (l && drawnLive(task, l)) {
      // The reducer replays the task from its first event, so its status is current.
      const steps = Math.max(l.steps, task.step_count);
      return { task: { ...task, status: l.status }, items: l.items, streaming: l.streaming, live: true, steps, tokens: l.tokens };
    }
    const stored = history.get(task.id) ?? [];
    const items = l ? handed(task.id, l.items, stored) : stored;
    const tokens = task.prompt_tokens + task.completion_tokens;
    return { task, items, streaming: null, live: false, steps: task.step_count, tokens };
  });
  for (const l of Object.values(live)) {
    if (!tasks.some((t) => t.id === l.taskId)) {
      const task = placeholderTask(l.taskId, sessionId, l);
      views.push({ task, items: l.items, streaming: l.streaming, live: true, steps: l.steps, tokens: l.tokens });
    }
  }
  return views;
}

function placeholderTask(id: number, sessionId: number, l: LiveState): Task {
  return {
    id,
    session_id: sessionId,
    goal: "",
    trigger: "chat",
    provider: null,
    follow_up_of: null,
    status: l.status,
    step_count: 0,
    prompt_tokens: 0,
    completion_tokens: 0,
    active_ms: 0,
    grants: [],
    mcp: [],
    final_answer: l.finalAnswer,
    error: null,
    created_at: "",
    started_at: null,
    finished_at: null,
    extra: { steps: 0, seconds: 0, tokens: 0, usd: 0 },
    pause: null,
  };
}
