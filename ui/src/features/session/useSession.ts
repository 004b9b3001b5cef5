// A session's state for its view: tasks and entries from the store, plus a live reducer
// for each task that has not ended. A finished task is drawn from the store's entries;
// a task watched live is drawn from its reducer (which closes on a terminal event) until
// the store, read again after the run ended, says it ended too: then from its entries,
// which carry the ids a rewind, an edit or a regenerate goes back to (views.ts). The two
// are never mixed for one task, so no text is shown twice.
//
// A session opens at its newest tasks (PAGE of them) and grows by PAGE older ones on
// request, so a long session opens as fast as a short one.
//
// Channel events are not applied one by one: they are queued and folded into the live
// state once per animation frame (stream/batch.ts), so a fast stream re-renders the view
// at most once per frame.
import { useCallback, useEffect, useMemo, useRef, useState } from "preact/hooks";
import { sessionHistory, subscribeTask, errorMessage } from "../../api/commands";
import type { Entry, Task, TaskEvent, TaskFailure } from "../../api/generated/bindings";
import { frameBatcher, reduceBatch, type Batcher } from "../stream/batch";
import { historyItems } from "../stream/history";
import type { Item, PendingApproval } from "../stream/items";
import { initialLive, type LiveState } from "../stream/reducer";
import { isTerminalStatus } from "../stream/terminal";
import { handOverCache, sessionViews, type TaskView } from "./views";

export type { TaskView };

export interface SessionState {
  views: TaskView[];
  /** The task that has not ended yet, if any: the session is busy. */
  busyTask: number | null;
  approval: PendingApproval | null;
  error: string | null;
  loaded: boolean;
  /** Whether the session has older tasks than those shown. */
  earlier: boolean;
  /** The stored entries of the tasks shown (what a compaction divider names). */
  entries: Entry[];
  showEarlier: () => Promise<void>;
  refresh: () => Promise<void>;
  watch: (taskId: number) => void;
}

/** How many tasks a session view loads at a time. */
export const PAGE = 50;

export function useSession(sessionId: number): SessionState {
  const [tasks, setTasks] = useState<Task[]>([]);
  const [earlier, setEarlier] = useState(false);
  // How many of the newest tasks are shown; a ref, so refresh reads the current count.
  const shown = useRef(PAGE);
  const [entries, setEntries] = useState<Entry[]>([]);
  const [failures, setFailures] = useState<TaskFailure[]>([]);
  const [live, setLiveState] = useState<Record<number, LiveState>>({});
  // The live map as last set: the batch flush folds into it without waiting for a render.
  const liveRef = useRef<Record<number, LiveState>>({});
  const setLive = (next: Record<number, LiveState>) => {
    liveRef.current = next;
    setLiveState(next);
  };
  const [error, setError] = useState<string | null>(null);
  const [loaded, setLoaded] = useState(false);
  const subs = useRef(new Map<number, () => void>());
  const current = useRef(sessionId);

  // Refreshes can overlap (a run ended, the inbox changed, "show earlier"): only the
  // newest request's answer is applied, whatever order they come back in.
  const latest = useRef(0);
  const refresh = useCallback(async () => {
    const ticket = ++latest.current;
    try {
      const h = await sessionHistory(sessionId, shown.current);
      if (current.current !== sessionId || ticket !== latest.current) return;
      const t = h.tasks;
      setTasks(t);
      setEntries(h.entries);
      setFailures(h.failures);
      setEarlier(h.earlier);
      setError(null);
      for (const task of t) if (!isTerminalStatus(task.status)) watch(task.id);
    } catch (e) {
      setError(errorMessage(e));
    } finally {
      setLoaded(true);
    }
  }, [sessionId]);

  // One queue for all the tasks this view watches, handed over once per frame.
  const batcher = useRef<Batcher<[number, TaskEvent]> | null>(null);
  const applyBatch = (events: [number, TaskEvent][]) => {
    const byTask = new Map<number, TaskEvent[]>();
    for (const [taskId, ev] of events) {
      const list = byTask.get(taskId);
      if (list) list.push(ev);
      else byTask.set(taskId, [ev]);
    }
    const m = liveRef.current;
    const next = { ...m };
    let changed = false;
    let ended = false;
    for (const [taskId, evs] of byTask) {
      const before = m[taskId] ?? initialLive(taskId);
      const after = reduceBatch(before, evs);
      if (after === m[taskId]) continue;
      next[taskId] = after;
      changed = true;
      if (after.closed && !before.closed) ended = true;
    }
    if (changed) setLive(next);
    if (ended) void refreshLater();
  };
  const queue = () => {
    if (!batcher.current) batcher.current = frameBatcher<[number, TaskEvent]>(applyBatch);
    return batcher.current;
  };

  const watch = useCallback(
    (taskId: number) => {
      if (subs.current.has(taskId)) return;
      subs.current.set(taskId, () => {});
      const m = liveRef.current;
      if (!m[taskId]) setLive({ ...m, [taskId]: initialLive(taskId) });
      const q = queue();
      subscribeTask(taskId, 0, (ev) => q.push([taskId, ev]))
        .then((stop) => subs.current.set(taskId, stop))
        .catch((e) => setError(errorMessage(e)));
    },
    [sessionId],
  );

  // After a run ends, re-read the store so task statuses and counts are current.
  const refreshLater = () => setTimeout(() => void refresh(), 0);

  const showEarlier = useCallback(async () => {
    shown.current += PAGE;
    await refresh();
  }, [refresh]);

  useEffect(() => {
    current.current = sessionId;
    shown.current = PAGE;
    setEarlier(false);
    setTasks([]);
    setEntries([]);
    setFailures([]);
    setLive({});
    setLoaded(false);
    void refresh();
    const own = subs.current;
    return () => {
      for (const stop of own.values()) stop();
      own.clear();
      batcher.current?.dispose();
      batcher.current = null;
    };
  }, [sessionId]);

  // A finished task's items are derived from the store's entries: computed when those
  // change, not on every render (a live task elsewhere in the view re-renders per frame),
  // so the transcript sees the same item arrays and skips them.
  const history = useMemo(() => {
    const m = new Map<number, Item[]>();
    const failed = new Map(failures.map((f) => [f.task_id, f]));
    for (const task of tasks) m.set(task.id, historyItems(task, entries, failed.get(task.id)));
    return m;
  }, [tasks, entries, failures]);
  // A task watched live keeps its live state after it ends; its history takes over from
  // it once read back (views.ts), the same arrays while neither changes.
  const handed = useRef(handOverCache());

  const views = sessionViews(sessionId, tasks, live, history, handed.current);
  const busy = Object.values(live).find((l) => !l.closed);
  const approval = Object.values(live).find((l) => l.approval)?.approval ?? null;
  return { views, busyTask: busy?.taskId ?? null, approval, error, loaded, earlier, entries, showEarlier, refresh, watch };
}
