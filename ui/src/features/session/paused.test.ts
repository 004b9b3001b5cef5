import { describe, expect, it } from "vitest";
import type { PauseOffer } from "../../api/generated/bindings";
import { amountValid, composerPlaceholder, proposedAmount, raiseFor, stepLimit, stopLabel, tokenLimit } from "./paused";

const stepsOffer: PauseOffer = {
  task_id: 4,
  reason: "budget",
  budget: "steps",
  sentence: "The agent used all 3 of its 3 steps without finishing.",
  used: 3,
  limit: 3,
  raise: { steps: 3, seconds: 0, tokens: 0, usd: 0 },
};

describe("the paused card", () => {
  it("proposes the budget again and sends it when nothing was typed", () => {
    expect(proposedAmount(stepsOffer)).toBe(3);
    expect(raiseFor(stepsOffer, null)).toEqual({ steps: 3 });
  });

  it("sends what the person typed, whole steps", () => {
    expect(raiseFor(stepsOffer, 7)).toEqual({ steps: 7 });
    expect(raiseFor(stepsOffer, 2.6)).toEqual({ steps: 3 });
    const usd: PauseOffer = { ...stepsOffer, budget: "usd", raise: { steps: 0, seconds: 0, tokens: 0, usd: 2 } };
    expect(raiseFor(usd, null)).toEqual({ usd: 2 });
    expect(raiseFor(usd, 0.5)).toEqual({ usd: 0.5 });
  });

  it("never offers zero: a zero or empty amount is not valid, and no raise is sent for it", () => {
    expect(amountValid(0)).toBe(false);
    expect(amountValid(Number.NaN)).toBe(false);
    expect(amountValid(null)).toBe(true);
    expect(raiseFor(stepsOffer, 0)).toEqual({});
    expect(proposedAmount({ ...stepsOffer, raise: { steps: 0, seconds: 0, tokens: 0, usd: 0 } })).toBeNull();
  });

  it("sends no raise after a repetition pause or before the offer is known", () => {
    expect(raiseFor(null, null)).toEqual({});
    expect(raiseFor({ ...stepsOffer, reason: "repetition", budget: null }, null)).toEqual({});
  });
});

describe("the header", () => {
  it("shows the limit with what was raised, so a continued run never reads 5/3", () => {
    const raised = { extra: { steps: 3, seconds: 0, tokens: 500, usd: 0 } };
    expect(stepLimit(3, raised)).toBe(6);
    expect(tokenLimit(1000, raised)).toBe(1500);
    expect(stepLimit(null, raised)).toBeNull();
  });
});

describe("the composer and Stop while paused", () => {
  it("say paused, not working", () => {
    expect(composerPlaceholder("paused")).toMatch(/paused/);
    expect(composerPlaceholder("paused")).not.toMatch(/working/);
    expect(composerPlaceholder("working")).toMatch(/working/);
    expect(stopLabel("paused")).toMatch(/paused/i);
    expect(stopLabel("working")).toBe("Stop");
  });
});
