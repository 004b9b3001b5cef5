import { describe, expect, it } from "vitest";
import type { ContextUse } from "../../api/generated/bindings";
import { compactChoice, contextRevision, meterLevel, meterPercent, meterText, originLabel } from "./meter";

const use = (used: number, window: number, limit: number, origin: ContextUse["window_source"] = "assumed"): ContextUse => ({
  session_id: 1,
  used,
  window,
  window_source: origin,
  limit,
  last_request: null,
  compactions: 0,
});

describe("the context meter", () => {
  it("says used / window and where the window came from", () => {
    expect(meterText(use(1234, 8192, 6000))).toBe("1,234 / 8,192 tokens");
    expect(originLabel("assumed")).toBe("assumed");
    expect(originLabel("discovered")).toBe("from the server");
    expect(originLabel("setting")).toBe("set");
  });

  it("is high from 80% of what a request may take and full at it", () => {
    expect(meterLevel(use(100, 8192, 6000))).toBe("ok");
    expect(meterLevel(use(4800, 8192, 6000))).toBe("high");
    expect(meterLevel(use(6000, 8192, 6000))).toBe("full");
    expect(meterPercent(use(4096, 8192, 6000))).toBe(50);
    expect(meterPercent(use(9000, 8192, 6000))).toBe(100);
  });

  it("re-reads when a task starts or ends or an item is added, not when a bubble streams", () => {
    const v = (status: string, n: number) => [{ task: { id: 3, status }, items: Array.from({ length: n }, () => ({ kind: "user" })) }];
    expect(contextRevision(v("running", 1))).toBe(contextRevision(v("running", 1)));
    expect(contextRevision(v("running", 1))).not.toBe(contextRevision(v("running", 2)));
    expect(contextRevision(v("running", 2))).not.toBe(contextRevision(v("completed", 2)));
  });
});

describe("the meter never shows more than the window", () => {
  it("says full, and by how much, past the window", () => {
    expect(meterText(use(6349, 6000, 5000))).toBe("6,000 / 6,000 tokens, full (349 over)");
    expect(meterPercent(use(6349, 6000, 5000))).toBe(100);
    expect(meterText(use(6000, 6000, 5000))).toBe("6,000 / 6,000 tokens");
  });
});

describe("Compact now is offered when it would help", () => {
  it("is enabled for an idle session with a context worth compacting, even past full", () => {
    expect(compactChoice(use(4800, 8192, 6000), false, false).enabled).toBe(true);
    expect(compactChoice(use(6349, 6000, 5000), false, false).enabled).toBe(true);
  });
  it("is not while the agent works, while reading, or with little to gain", () => {
    const busy = compactChoice(use(4800, 8192, 6000), true, false);
    expect(busy).toEqual({ enabled: false, why: "Compacting waits until the agent is idle" });
    expect(compactChoice(null, false, false).enabled).toBe(false);
    expect(compactChoice(use(4800, 8192, 6000), false, true).enabled).toBe(false);
    const small = compactChoice(use(500, 8192, 6000), false, false);
    expect(small.enabled).toBe(false);
    expect(small.why).toContain("Nothing worth compacting yet");
  });
});
