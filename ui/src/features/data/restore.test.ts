import { describe, expect, it } from "vitest";
import type { BackupFile } from "../../api/generated/bindings";
import { confirmThenRestore, restorePrompt, type RestorePrompt } from "./restore";

const backup = (over: Partial<BackupFile> = {}): BackupFile => ({
  name: "store-v11-20261202T101500Z.db",
  path: "/data/backups/store-v11-20261202T101500Z.db",
  schema_version: 11,
  taken_at: "2026-12-02T10:15:00Z",
  bytes: 3 * 1_048_576,
  ...over,
});

describe("Restore… asks first", () => {
  it("restores nothing when the person says no", async () => {
    const restored: string[] = [];
    const asked: RestorePrompt[] = [];
    const done = await confirmThenRestore(
      backup(),
      async (p) => {
        asked.push(p);
        return false;
      },
      async (name) => restored.push(name),
      11,
    );
    expect(done).toBe(false);
    expect(asked).toHaveLength(1);
    expect(restored).toEqual([]);
  });

  it("restores exactly the backup it asked about, after the yes", async () => {
    const order: string[] = [];
    const done = await confirmThenRestore(
      backup({ name: "store-v9-20261101T080000Z.db", schema_version: 9 }),
      async () => {
        order.push("asked");
        return true;
      },
      async (name) => order.push(`restored ${name}`),
      11,
    );
    expect(done).toBe(true);
    expect(order).toEqual(["asked", "restored store-v9-20261101T080000Z.db"]);
  });

  it("says what is lost, what is kept, and when the copy is from an older version", () => {
    const same = restorePrompt(backup(), 11);
    expect(same.title).toContain("2026-12-02T10:15:00Z");
    expect(same.body).toContain("3.0 MB");
    expect(same.body).toContain("is no longer in it");
    expect(same.body).toContain("kept as a backup");
    expect(same.body).not.toContain("earlier version");
    const older = restorePrompt(backup({ schema_version: 9 }), 11);
    expect(older.body).toContain("earlier version of PocketPilot (schema 9)");
  });
});
