import { describe, expect, it } from "vitest";
import { isGone, sessionOf } from "./leave";

describe("leaving a deleted session's view", () => {
  it("leaves a session that was listed and is not any more", () => {
    expect(isGone({ name: "session", id: 3 }, new Set([1, 3]), new Set([1]))).toBe(true);
    expect(isGone({ name: "rules", id: 3 }, new Set([3]), new Set())).toBe(true);
  });
  it("stays on a session created but not listed yet", () => {
    expect(isGone({ name: "session", id: 9 }, new Set([1]), new Set([1]))).toBe(false);
  });
  it("stays while the session is still listed, and on views of no session", () => {
    expect(isGone({ name: "session", id: 1 }, new Set([1]), new Set([1, 2]))).toBe(false);
    expect(isGone({ name: "settings" }, new Set([1]), new Set())).toBe(false);
    expect(sessionOf({ name: "task", id: 4 })).toBe(null);
  });
});
