// Whether the window must leave the view it shows because its session was deleted: named
// by the feed (`session_deleted`, this window or this process), or gone from a re-read list
// that had it (another process, e.g. `pocketpilot session delete`, brings only `refresh`).
// A session just created and not listed yet is not gone: it was never seen.
import type { Route } from "../../lib/route";

/** The session a route shows, or null. */
export function sessionOf(route: Route): number | null {
  return route.name === "session" || route.name === "rules" ? route.id : null;
}

export function isGone(route: Route, seen: ReadonlySet<number>, now: ReadonlySet<number>): boolean {
  const id = sessionOf(route);
  return id !== null && seen.has(id) && !now.has(id);
}
