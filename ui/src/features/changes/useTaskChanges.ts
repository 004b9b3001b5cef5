// Per task of a session: how many files it changed and whether it can be undone. Read
// again whenever a task of the session moves (a run recorded changes) or anything else
// changed (an undo, another process).
import { useCallback, useEffect, useState } from "preact/hooks";
import { sessionChanges } from "../../api/commands";
import type { TaskChanges } from "../../api/generated/bindings";
import { useChanges } from "../../store/useStore";

export function useTaskChanges(sessionId: number): { byTask: Map<number, TaskChanges>; reload: () => Promise<void> } {
  const [byTask, setByTask] = useState<Map<number, TaskChanges>>(new Map());
  const reload = useCallback(async () => {
    try {
      const list = await sessionChanges(sessionId);
      setByTask(new Map(list.map((t) => [t.task_id, t])));
    } catch {
      // The line is a convenience: the transcript stays usable without it.
    }
  }, [sessionId]);
  useEffect(() => {
    void reload();
  }, [reload]);
  useChanges(
    (c) => {
      if ((c.kind === "task" && (c.session_id === sessionId || c.session_id === null)) || c.kind === "refresh") {
        void reload();
      }
    },
    [sessionId, reload],
  );
  return { byTask, reload };
}
