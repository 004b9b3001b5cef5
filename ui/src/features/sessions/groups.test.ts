import { describe, expect, it } from "vitest";
import type { Session } from "../../api/generated/bindings";
import { dayLabel, groupByDay, workspacesOf } from "./groups";

const session = (id: number, updated: Date, workspace = "/w/a"): Session => ({
  id,
  title: `s${id}`,
  workspace,
  steering_mode: "one-at-a-time",
  follow_up_mode: "one-at-a-time",
  last_failure: null,
  created_at: updated.toISOString(),
  updated_at: updated.toISOString(),
});

const now = new Date(2026, 11, 2, 15, 0);
const at = (days: number, hour = 10) => new Date(2026, 11, 2 - days, hour, 0);

describe("sessions by day", () => {
  it("labels days from the local midnight", () => {
    expect(dayLabel(at(0, 0), now)).toBe("Today");
    expect(dayLabel(at(1, 23), now)).toBe("Yesterday");
    expect(dayLabel(at(2), now)).toBe("Previous 7 days");
    expect(dayLabel(at(7), now)).toBe("Previous 7 days");
    expect(dayLabel(at(8), now)).toBe("Previous 30 days");
    expect(dayLabel(new Date(2026, 5, 3), now)).toContain("2026");
  });

  it("keeps the runtime's order inside each group", () => {
    const list = [session(5, at(0, 12)), session(4, at(0, 9)), session(3, at(1)), session(2, at(3)), session(1, at(3))];
    const groups = groupByDay(list, now);
    expect(groups.map((g) => g.label)).toEqual(["Today", "Yesterday", "Previous 7 days"]);
    expect(groups.map((g) => g.sessions.map((s) => s.id))).toEqual([[5, 4], [3], [2, 1]]);
  });

  it("lists each folder once", () => {
    const list = [session(3, at(0), "/w/b"), session(2, at(0), "/w/a"), session(1, at(1), "/w/b")];
    expect(workspacesOf(list)).toEqual(["/w/b", "/w/a"]);
  });
});
