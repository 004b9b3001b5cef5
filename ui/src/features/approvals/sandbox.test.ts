import { describe, expect, it } from "vitest";
import { ev, restart } from "../stream/events.test-support";
import { isUnsandboxed, sandboxLineOf } from "./sandbox";

describe("the sandbox line", () => {
  it("is red only when it says NOT sandboxed", () => {
    expect(isUnsandboxed("NOT sandboxed: POCKETPILOT_SANDBOX=off is set")).toBe(true);
    expect(isUnsandboxed("sandboxed: writes in the workspace only, no network")).toBe(false);
  });

  it("of a stored approval is read from its call's approval_required event", () => {
    restart();
    const events = [
      ev("approval_required", { call_id: "a", sandbox: "sandboxed: writes in the workspace only, no network" }),
      ev("approval_required", { call_id: "b" }),
    ];
    expect(sandboxLineOf(events, "a")).toBe("sandboxed: writes in the workspace only, no network");
    expect(sandboxLineOf(events, "b")).toBeNull();
    expect(sandboxLineOf(events, "c")).toBeNull();
  });
});
