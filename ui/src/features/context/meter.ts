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

/** "1,234 / 8,192 tokens"; past the window it says so rather than a figure over it. */
export function meterText(u: ContextUse): string {
  if (u.window > 0 && u.used > u.window) {
    return `${fmt.format(u.window)} / ${fmt.format(u.window)} tokens, full (${fmt.format(u.used - u.window)} over)`;
  }
  return `${fmt.format(u.used)} / ${fmt.format(u.window)} tokens`;
}

/** Below this share of what a request may take, a compaction has too little to gain. */
export const COMPACT_FROM = 0.2;

/** Whether "Compact now" is offered, and why not when it is not. */
export function compactChoice(
  u: ContextUse | null,
  busy: boolean,
  working: boolean,
): { enabled: true; why: string } | { enabled: false; why: string } {
  if (working) return { enabled: false, why: "Working on it…" };
  if (!u) return { enabled: false, why: "Reading the context…" };
  if (busy) return { enabled: false, why: "Compacting waits until the agent is idle" };
  if (u.limit > 0 && u.used < u.limit * COMPACT_FROM) {
    return { enabled: false, why: `Nothing worth compacting yet: the next request takes ${meterPercent(u)}% of the window` };
  }
  return { enabled: true, why: "Summarise older turns now" };
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
