// A session's inbox: the submissions still queued, from the session store (kept current
// by the change feed: a send, a withdraw, a boundary that places items, another process),
// and at once after this view's own send or withdraw.
import { useCallback, useEffect, useRef, useState } from "preact/hooks";
import { errorKind, errorMessage, withdrawSubmission } from "../../api/commands";
import type { Submission } from "../../api/generated/bindings";
import { useSnapshot, useStoreInstance } from "../../store/useStore";

const NONE: Submission[] = [];

export interface InboxState {
  items: Submission[];
  error: string | null;
  reload: () => Promise<void>;
  withdraw: (id: number) => Promise<void>;
}

/** `onPlaced` runs when items left the inbox other than by a withdraw (a run took them). */
export function useInbox(sessionId: number, onPlaced: () => void): InboxState {
  const store = useStoreInstance();
  const items = useSnapshot().inboxes.get(sessionId) ?? NONE;
  const [error, setError] = useState<string | null>(null);
  const known = useRef<Set<number>>(new Set());
  const withdrawn = useRef<Set<number>>(new Set());
  const placed = useRef(onPlaced);
  placed.current = onPlaced;

  useEffect(() => {
    known.current = new Set();
    return store.watchInbox(sessionId);
  }, [store, sessionId]);

  // Items that left other than by a withdraw: a run took them.
  useEffect(() => {
    const ids = new Set(items.map((s) => s.id));
    const left = [...known.current].filter((id) => !ids.has(id) && !withdrawn.current.has(id));
    known.current = ids;
    if (left.length > 0) placed.current();
  }, [items]);

  const reload = useCallback(() => store.reloadInbox(sessionId), [store, sessionId]);

  const withdraw = async (id: number) => {
    try {
      withdrawn.current.add(id);
      await withdrawSubmission(id);
      setError(null);
    } catch (e) {
      // Already placed: the run took it first; the transcript shows it.
      setError(errorKind(e) === "not_queued" ? "Too late: the agent already read it." : errorMessage(e));
    }
    await reload();
  };

  return { items, error, reload, withdraw };
}
