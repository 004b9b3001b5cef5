// A session's inbox: the submissions still queued. Re-read while the session is busy or
// something waits (items leave the inbox when a boundary places them), and at once after
// a send or a withdraw.
import { useCallback, useEffect, useRef, useState } from "preact/hooks";
import { errorKind, errorMessage, sessionInbox, withdrawSubmission } from "../../api/commands";
import type { Submission } from "../../api/types";

const POLL_MS = 400;

export interface InboxState {
  items: Submission[];
  error: string | null;
  reload: () => Promise<void>;
  withdraw: (id: number) => Promise<void>;
}

/** `onPlaced` runs when items left the inbox other than by a withdraw (a run took them). */
export function useInbox(sessionId: number, busy: boolean, onPlaced: () => void): InboxState {
  const [items, setItems] = useState<Submission[]>([]);
  const [error, setError] = useState<string | null>(null);
  const known = useRef<Set<number>>(new Set());
  const withdrawn = useRef<Set<number>>(new Set());
  const placed = useRef(onPlaced);
  placed.current = onPlaced;

  const reload = useCallback(async () => {
    try {
      const next = await sessionInbox(sessionId);
      const ids = new Set(next.map((s) => s.id));
      const left = [...known.current].filter((id) => !ids.has(id) && !withdrawn.current.has(id));
      known.current = ids;
      setItems(next);
      setError(null);
      if (left.length > 0) placed.current();
    } catch (e) {
      setError(errorMessage(e));
    }
  }, [sessionId]);

  useEffect(() => {
    known.current = new Set();
    setItems([]);
    void reload();
  }, [sessionId]);

  const waiting = busy || items.length > 0;
  useEffect(() => {
    if (!waiting) return;
    const t = setInterval(() => void reload(), POLL_MS);
    return () => clearInterval(t);
  }, [waiting, reload]);

  const withdraw = async (id: number) => {
    try {
      withdrawn.current.add(id);
      await withdrawSubmission(id);
    } catch (e) {
      // Already placed: the run took it first; the transcript shows it.
      setError(errorKind(e) === "not_queued" ? "Too late: the agent already read it." : errorMessage(e));
    }
    await reload();
  };

  return { items, error, reload, withdraw };
}
