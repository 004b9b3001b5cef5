// A session's state for its view: tasks and entries from the store, plus a live reducer
// for each task that has not ended. A finished task is drawn from the store's entries;
// a task watched live is drawn from its reducer (which closes on a terminal event). The
// two are never mixed for one task, so no text is shown twice.
import { useCallback, useEffect, useRef, useState } from "preact/hooks";
import { sessionEntries, sessionTasks, subscribeTask, errorMessage } from "../../api/commands";
import type { Entry, Task } from "../../api/types";
import { historyItems } from "../stream/history";
import type { Item, PendingApproval } from "../stream/items";
import { initialLive, reduceLive, type LiveState } from "../stream/reducer";
import { isTerminalStatus } from "../stream/terminal";

export interface TaskView {
  task: Task;
  items: Item[];
  streaming: string | null;
  live: boolean;
}

export interface SessionState {
  views: TaskView[];
  /** The task that has not ended yet, if any: the session is busy. */
  busyTask: number | null;
  approval: PendingApproval | null;
  error: string | null;
  loaded: boolean;
  refresh: () => Promise<void>;
  watch: (taskId: number) => void;
}

export function useSession(sessionId: number): SessionState {
  const [tasks, setTasks] = useState<Task[]>([]);
  const [entries, setEntries] = useState<Entry[]>([]);
  const [live, setLive] = useState<Record<number, LiveState>>({});
  const [error, setError] = useState<string | null>(null);
  const [loaded, setLoaded] = useState(false);
  const subs = useRef(new Map<number, () => void>());
  const current = useRef(sessionId);

  const refresh = useCallback(async () => {
    try {
      const [t, e] = await Promise.all([sessionTasks(sessionId), sessionEntries(sessionId)]);
      if (current.current !== sessionId) return;
      setTasks(t);
      setEntries(e);
      setError(null);
      for (const task of t) if (!isTerminalStatus(task.status)) watch(task.id);
    } catch (e) {
      setError(errorMessage(e));
    } finally {
      setLoaded(true);
    }
  }, [sessionId]);

  const watch = useCallback(
    (taskId: number) => {
      if (subs.current.has(taskId)) return;
      subs.current.set(taskId, () => {});
      setLive((m) => ({ ...m, [taskId]: m[taskId] ?? initialLive(taskId) }));
      subscribeTask(taskId, 0, (ev) => {
        setLive((m) => {
          const next = reduceLive(m[taskId] ?? initialLive(taskId), ev);
          if (next.closed && !m[taskId]?.closed) void refreshLater();
          return { ...m, [taskId]: next };
        });
      })
        .then((stop) => subs.current.set(taskId, stop))
        .catch((e) => setError(errorMessage(e)));
    },
    [sessionId],
  );

  // After a run ends, re-read the store so task statuses and counts are current.
  const refreshLater = () => setTimeout(() => void refresh(), 0);

  useEffect(() => {
    current.current = sessionId;
    setTasks([]);
    setEntries([]);
    setLive({});
    setLoaded(false);
    void refresh();
    const own = subs.current;
    return () => {
      for (const stop of own.values()) stop();
      own.clear();
    };
  }, [sessionId]);

  const views: TaskView[] = tasks.map((task) => {
    const l = live[task.id];
    // The reducer replays the task from its first event, so its status is current.
    if (l) return { task: { ...task, status: l.status }, items: l.items, streaming: l.streaming, live: true };
    return { task, items: historyItems(task, entries), streaming: null, live: false };
  });
  // A task created from this view may be live before the task list has it.
  for (const l of Object.values(live)) {
    if (!tasks.some((t) => t.id === l.taskId)) {
      views.push({ task: placeholderTask(l.taskId, sessionId, l), items: l.items, streaming: l.streaming, live: true });
    }
  }
  const busy = Object.values(live).find((l) => !l.closed);
  const approval = Object.values(live).find((l) => l.approval)?.approval ?? null;
  return { views, busyTask: busy?.taskId ?? null, approval, error, loaded, refresh, watch };
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
    final_answer: l.finalAnswer,
    error: null,
    created_at: "",
    started_at: null,
    finished_at: null,
  };
}
