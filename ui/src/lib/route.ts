// Hash routes: the webview loads one page, and a reload keeps the route.
//   #/new               a new session (workspace + first goal)
//   #/session/ID        a session's transcript and composer
//   #/session/ID/entry/E  the same, scrolled to entry E (a search hit)
//   #/task/ID           a task's event timeline
//   #/rules/ID          the instructions, memories and skills in effect for a session
//   #/settings          provider, key, limits, workspace policy
//   #/models            the models kept on this computer (the built-in model)
import { useEffect, useState } from "preact/hooks";

export type Route =
  | { name: "new" }
  | { name: "settings" }
  | { name: "models" }
  | { name: "session"; id: number; entry?: number }
  | { name: "task"; id: number }
  | { name: "rules"; id: number };

export function parseRoute(hash: string): Route {
  if (hash.startsWith("#/settings")) return { name: "settings" };
  if (hash.startsWith("#/models")) return { name: "models" };
  const hit = /^#\/session\/(\d+)\/entry\/(\d+)/.exec(hash);
  if (hit) return { name: "session", id: Number(hit[1]), entry: Number(hit[2]) };
  const m = /^#\/(session|task|rules)\/(\d+)/.exec(hash);
  if (m) return { name: m[1] as "session" | "task" | "rules", id: Number(m[2]) };
  return { name: "new" };
}

export const hrefOf = (r: Route): string =>
  r.name === "new" || r.name === "settings" || r.name === "models"
    ? `#/${r.name}`
    : r.name === "session" && r.entry !== undefined
      ? `#/session/${r.id}/entry/${r.entry}`
      : `#/${r.name}/${r.id}`;

export function navigate(r: Route): void {
  window.location.hash = hrefOf(r);
}

export function useRoute(): Route {
  const [route, setRoute] = useState(() => parseRoute(window.location.hash));
  useEffect(() => {
    const on = () => setRoute(parseRoute(window.location.hash));
    window.addEventListener("hashchange", on);
    return () => window.removeEventListener("hashchange", on);
  }, []);
  return route;
}
