import { describe, expect, it } from "vitest";
import { hrefOf, parseRoute } from "../../lib/route";

describe("the rules route", () => {
  it("round-trips a session's Instructions in effect", () => {
    expect(parseRoute("#/rules/7")).toEqual({ name: "rules", id: 7 });
    expect(hrefOf({ name: "rules", id: 7 })).toBe("#/rules/7");
  });
});
