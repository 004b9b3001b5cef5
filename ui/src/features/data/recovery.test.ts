import { describe, expect, it } from "vitest";
import type { Recovered, StoreProblem } from "../../api/generated/bindings";
import { keptText, recoveryTitle } from "./Recovery";

const problem = (kind: StoreProblem["kind"]): StoreProblem => ({
  kind,
  message: "m",
  store: "/d/pocketpilot.db",
  backup: null,
  command: null,
});

const backup = { name: "store-v13-x.db", path: "/d/backups/store-v13-x.db", schema_version: 13, taken_at: "t", bytes: 1 };

describe("the recovery screen", () => {
  it("names the problem", () => {
    expect(recoveryTitle(problem("damaged"))).toContain("damaged");
    expect(recoveryTitle(problem("newer"))).toContain("newer");
  });

  it("says where the replaced file went", () => {
    const aside: Recovered = {
      restored: { from: "f", schema_version: 13, kept: { kind: "set_aside", dir: "/d/damaged/1" } },
      kept: "/d/damaged/1",
    };
    expect(keptText(aside)).toBe("The damaged file was kept in /d/damaged/1.");
    const asBackup: Recovered = {
      restored: { from: "f", schema_version: 13, kept: { kind: "backup", file: backup } },
      kept: backup.path,
    };
    expect(keptText(asBackup)).toBe(`The file it replaced was kept as ${backup.path}.`);
    expect(keptText({ restored: { from: "f", schema_version: 13, kept: { kind: "nothing" } }, kept: null })).toBe("");
  });
});
