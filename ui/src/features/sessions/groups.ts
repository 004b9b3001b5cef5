// The sidebar's sessions grouped by the day they were last active, in the person's local
// time: Today, Yesterday, the previous 7 and 30 days, then by month. Order within a group
// is kept (newest first, as the runtime lists them).
import type { Session } from "../../api/generated/bindings";

export interface SessionGroup {
  label: string;
  sessions: Session[];
}

const DAY = 24 * 60 * 60 * 1000;

function startOfDay(t: Date): number {
  return new Date(t.getFullYear(), t.getMonth(), t.getDate()).getTime();
}

/** The group a moment falls in, seen from `now`. */
export function dayLabel(at: Date, now: Date): string {
  const today = startOfDay(now);
  const day = startOfDay(at);
  if (day >= today) return "Today";
  if (day >= today - DAY) return "Yesterday";
  if (day >= today - 7 * DAY) return "Previous 7 days";
  if (day >= today - 30 * DAY) return "Previous 30 days";
  return at.toLocaleDateString(undefined, { month: "long", year: "numeric" });
}

export function groupByDay(sessions: readonly Session[], now: Date = new Date()): SessionGroup[] {
  const groups: SessionGroup[] = [];
  for (const s of sessions) {
    const at = new Date(s.updated_at);
    const label = Number.isNaN(at.getTime()) ? "Earlier" : dayLabel(at, now);
    const last = groups[groups.length - 1];
    const same = groups.find((g) => g.label === label);
    if (last && last.label === label) last.sessions.push(s);
    else if (same) same.sessions.push(s);
    else groups.push({ label, sessions: [s] });
  }
  return groups;
}

/** The folders sessions work in, each once, by how recently they were used. */
export function workspacesOf(sessions: readonly Session[]): string[] {
  return [...new Set(sessions.map((s) => s.workspace))];
}
