// A session's context as its view shows it: the meter's figures and the dividers between
// tasks. Read when the session opens, then again when something that changes them
// happens: a change of this session from the feed (a run started or ended, its inbox
// changed: a fresh context is placed through it, another process's commits), or a
// change of what the view holds (`revision`: an item added, a compaction arrived over
// the task's subscription). Never on a timer. Reads coalesce: one in flight at a time,
// and at most one more after it.
import { useCallback, useEffect, useRef, useState } from "preact/hooks";
import { contextMarks, contextUse, errorMessage } from "../../api/commands";
import type { ContextMarks, ContextUse } from "../../api/generated/bindings";
import { useChanges } from "../../store/useStore";

export interface ContextState {
  use: ContextUse | null;
  marks: ContextMarks;
  error: string | null;
  reload: () => Promise<void>;
}

const NO_MARKS: ContextMarks = { compactions: [], resets: [] };

export function useContextState(sessionId: number, revision: string): ContextState {
  const [use, setUse] = useState<ContextUse | null>(null);
  const [marks, setMarks] = useState<ContextMarks>(NO_MARKS);
  const [error, setError] = useState<string | null>(null);
  const running = useRef<Promise<void> | null>(null);
  const stale = useRef(false);
  const current = useRef(sessionId);
  current.current = sessionId;

  const reload = useCallback((): Promise<void> => {
    if (running.current) {
      stale.current = true;
      return running.current;
    }
    const run = (async () => {
      do {
        stale.current = false;
        // The session shown now: a read asked for while another session's was in flight
        // is for this one.
        const id = current.current;
        try {
          const [u, m] = await Promise.all([contextUse(id), contextMarks(id)]);
          if (current.current !== id) return;
          setUse(u);
          setMarks(m);
          setError(null);
        } catch (e) {
          if (current.current === id) setError(errorMessage(e));
        }
      } while (stale.current);
    })().finally(() => {
      running.current = null;
    });
    running.current = run;
    return run;
  }, []);

  useEffect(() => {
    setUse(null);
    setMarks(NO_MARKS);
    setError(null);
  }, [sessionId]);
  useEffect(() => {
    void reload();
  }, [reload, revision]);
  useChanges(
    (c) => {
      const mine =
        c.kind === "refresh" ||
        (c.kind === "task" && (c.session_id === sessionId || c.session_id === null)) ||
        (c.kind === "inbox" && c.session_id === sessionId);
      if (mine) void reload();
    },
    [sessionId, reload],
  );
  return { use, marks, error, reload };
}
