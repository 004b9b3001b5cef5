import { describe, expect, it } from "vitest";
import type { ContextUse } from "../../api/generated/bindings";
import { contextRevision, meterLevel, meterPercent, meterText, originLabel } from "./meter";

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
