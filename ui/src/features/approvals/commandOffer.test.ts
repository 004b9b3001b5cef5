import { describe, expect, it } from "vitest";
import { addedOn, ruleList } from "./commandOffer";

describe("command rule wording", () => {
  it("lists rules as code, joined as a sentence", () => {
    expect(ruleList([])).toBe("");
    expect(ruleList(["cargo test *"])).toBe("`cargo test *`");
    expect(ruleList(["a *", "b *", "c *"])).toBe("`a *`, `b *` and `c *`");
  });
  it("says when a rule was added, with the year only when it is another year's", () => {
    const now = new Date("2025-12-10T00:00:00Z");
    expect(addedOn("2025-12-02T10:00:00.000Z", now)).toBe("added 2 Dec");
    expect(addedOn("2024-03-05T10:00:00.000Z", now)).toBe("added 5 Mar 2024");
    expect(addedOn("not a date", now)).toBe("added not a date");
  });
});
