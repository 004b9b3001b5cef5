// Takes the window to the new-session screen when the session it shows is deleted (see
// leave.ts). Driven by the change feed and the list it re-reads: nothing polls.
import { useEffect, useRef } from "preact/hooks";
import type { Session } from "../../api/generated/bindings";
import { navigate, type Route } from "../../lib/route";
import { useChanges } from "../../store/useStore";
import { isGone, sessionOf } from "./leave";

export function useLeaveDeleted(route: Route, sessions: Session[], loaded: boolean) {
  useChanges(
    (c) => {
      if (c.kind === "session_deleted" && sessionOf(route) === c.session_id) navigate({ name: "new" });
    },
    [route],
  );
  const seen = useRef<ReadonlySet<number>>(new Set());
  useEffect(() => {
    if (!loaded) return;
    const now = new Set(sessions.map((s) => s.id));
    if (isGone(route, seen.current, now)) navigate({ name: "new" });
    seen.current = now;
  }, [sessions, loaded, route]);
}
