import { describe, expect, it } from "vitest";
import { exampleGoals } from "./examples";

describe("example goals", () => {
  it("name the chosen folder, three of them", () => {
    const goals = exampleGoals("/home/p/recipes/");
    expect(goals).toHaveLength(3);
    for (const g of goals) expect(g).toContain("recipes");
  });

  it("wait for a folder", () => {
    expect(exampleGoals("  ")).toEqual([]);
  });
});
