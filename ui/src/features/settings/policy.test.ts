import { describe, expect, it } from "vitest";
import { choiceOf, withChoice } from "./policy";

describe("workspace policy choices", () => {
  it("reads deny over allow and keeps rules it does not show", () => {
    const rules = { allow: ["fs:write", "shell"], deny: ["fs:write"] };
    expect(choiceOf(rules, "fs:write")).toBe("deny");
    expect(choiceOf(rules, "fs:read")).toBe("default");
    const next = withChoice(rules, "fs:write", "allow");
    expect(next).toEqual({ allow: ["shell", "fs:write"], deny: [] });
    expect(withChoice(next, "fs:write", "default")).toEqual({ allow: ["shell"], deny: [] });
  });
});
