import { describe, expect, it } from "vitest";
import { nextPending } from "./loaded";

describe("the parts a screen still waits for", () => {
  it("holds a part from its first report that it is loading until it says it is done", () => {
    const a = {};
    const b = {};
    let pending: ReadonlySet<object> = new Set();
    pending = nextPending(pending, a, false);
    pending = nextPending(pending, b, false);
    expect(pending.size).toBe(2);
    pending = nextPending(pending, a, true);
    expect([...pending]).toEqual([b]);
    // Loading again (a section re-reading for another workspace) holds the screen again.
    pending = nextPending(pending, a, false);
    expect(pending.size).toBe(2);
    pending = nextPending(nextPending(pending, a, true), b, true);
    expect(pending.size).toBe(0);
  });

  it("keeps the same set when nothing changes, so the screen does not redraw", () => {
    const a = {};
    const empty: ReadonlySet<object> = new Set();
    expect(nextPending(empty, a, true)).toBe(empty);
    const one = nextPending(empty, a, false);
    expect(nextPending(one, a, false)).toBe(one);
  });
});
