// The context meter's figures (issue 13): used / window tokens of the session's next
// request, and where the window figure came from. Pure; tested in meter.test.ts.
import type { ContextUse, WindowOrigin } from "../../api/generated/bindings";

/** What the origin of a window figure is called next to it. */
export function originLabel(o: WindowOrigin): string {
  switch (o) {
    case "discovered":
      return "from the server";
    case "setting":
      return "set";
    case "known":
      return "known model";
    case "assumed":
      return "assumed";
  }
}

const fmt = new Intl.NumberFormat("en-US");

/** "1,234 / 8,192 tokens" */
export function meterText(u: ContextUse): string {
  return `${fmt.format(u.used)} / ${fmt.format(u.window)} tokens`;
}

/** How full the next request is, against what a request may take (window − answer − margin). */
export function meterLevel(u: ContextUse): "ok" | "high" | "full" {
  if (u.limit <= 0 || u.used >= u.limit) return "full";
  return u.used >= u.limit * 0.8 ? "high" : "ok";
}

/** The share of the window used, 0–100. */
export function meterPercent(u: ContextUse): number {
  if (u.window <= 0) return 100;
  return Math.min(100, Math.round((u.used / u.window) * 100));
}

/** The parts of a session's view that change what the next request holds: a re-read of
 * the meter follows a change of this text (a task starting or ending, an item added, a
 * compaction), not a timer. */
export function contextRevision(views: { task: { id: number; status: string }; items: { kind: string }[] }[]): string {
  return views.map((v) => `${v.task.id}:${v.task.status}:${v.items.length}`).join(",");
}
