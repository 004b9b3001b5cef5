// "Restore…" in Settings → Data: what the confirm dialog says, and the one rule that the
// backup is put back only after the person said yes to exactly that backup.
import type { BackupFile } from "../../api/generated/bindings";

export interface RestorePrompt {
  title: string;
  body: string;
  confirm: string;
}

/** MB with one decimal (sizes arrive as bytes). */
export function sizeText(bytes: number): string {
  return `${(bytes / 1_048_576).toFixed(1)} MB`;
}

export function restorePrompt(b: BackupFile, newestSchema: number | null): RestorePrompt {
  const older =
    newestSchema !== null && b.schema_version < newestSchema
      ? ` It was made by an earlier version of PocketPilot (schema ${b.schema_version}); it is upgraded as it opens.`
      : "";
  return {
    title: `Put back the backup of ${b.taken_at}?`,
    body:
      `PocketPilot restarts and the store goes back to this copy (${sizeText(b.bytes)}): ` +
      `what happened after ${b.taken_at} is no longer in it.${older} ` +
      "The store it replaces is kept as a backup; nothing is deleted.",
    confirm: "Restart and restore",
  };
}

/** Asks, then restores the backup asked about; `false` when the person said no. */
export async function confirmThenRestore(
  b: BackupFile,
  ask: (p: RestorePrompt) => Promise<boolean>,
  restore: (name: string) => Promise<unknown>,
  newestSchema: number | null,
): Promise<boolean> {
  const yes = await ask(restorePrompt(b, newestSchema));
  if (!yes) return false;
  await restore(b.name);
  return true;
}
