import { describe, expect, it } from "vitest";
import { relativeTime } from "./relative";

describe("relative dates in the sessions list", () => {
  const now = Date.parse("2026-12-01T12:00:00Z");
  it("reads like a person would say it", () => {
    expect(relativeTime("2026-12-01T11:59:30Z", now)).toBe("just now");
    expect(relativeTime("2026-12-01T11:55:00Z", now)).toBe("5 min ago");
    expect(relativeTime("2026-12-01T09:00:00Z", now)).toBe("3 h ago");
    expect(relativeTime("2026-11-30T10:00:00Z", now)).toBe("yesterday");
    expect(relativeTime("2026-11-27T12:00:00Z", now)).toBe("4 days ago");
    expect(relativeTime("not a date", now)).toBe("not a date");
  });
});
