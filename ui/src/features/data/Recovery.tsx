// The screen for a store that cannot be opened (shell/recovery.rs): it is damaged, or a
// newer PocketPilot wrote it. It says what is wrong, that nothing was written to it, and
// offers the newest backup this version opens; putting it back opens the app as usual.
import { useState } from "preact/hooks";
import { errorMessage, recoverStore } from "../../api/commands";
import type { Recovered, StoreProblem } from "../../api/generated/bindings";
import { sizeText } from "./restore";

export function recoveryTitle(p: StoreProblem): string {
  return p.kind === "damaged"
    ? "PocketPilot's data file is damaged"
    : "This data was written by a newer PocketPilot";
}

/** What happens to the current file when the backup goes back, in words. */
export function keptText(r: Recovered): string {
  if (r.kept === null) return "";
  return r.restored.kept.kind === "set_aside"
    ? `The damaged file was kept in ${r.kept}.`
    : `The file it replaced was kept as ${r.kept}.`;
}

export function Recovery({ problem, reload }: { problem: StoreProblem; reload: () => void }) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [done, setDone] = useState<Recovered | null>(null);
  const b = problem.backup;
  const restore = () => {
    if (!b) return;
    setBusy(true);
    recoverStore(b.name)
      .then((r) => {
        setDone(r);
        setError(null);
      })
      .catch((e) => setError(errorMessage(e)))
      .finally(() => setBusy(false));
  };
  return (
    <main class="recovery" data-testid="recovery">
      <section class="card">
        <h1>{recoveryTitle(problem)}</h1>
        <p data-testid="recovery-message">{problem.message}</p>
        <p class="muted">PocketPilot has not written to it, and deletes nothing.</p>
        {problem.kind === "newer" && (
          <p>Install the newer version to go on with it, or put back a backup this version made.</p>
        )}
        {done ? (
          <div class="notice info" role="status" data-testid="recovery-done">
            <p>
              The backup of {done.restored.from} is back. {keptText(done)}
            </p>
            <button type="button" class="primary" data-testid="recovery-open" onClick={reload}>
              Open PocketPilot
            </button>
          </div>
        ) : b ? (
          <div data-testid="recovery-backup">
            <p>
              The newest backup this version opens is from <code>{b.taken_at}</code> (schema {b.schema_version},{" "}
              {sizeText(b.bytes)}). Putting it back brings back everything up to then; what happened after it is not
              in it. The current file is kept{problem.kind === "damaged" ? " aside, as it is" : " as a backup"}.
            </p>
            <button type="button" class="primary" data-testid="recovery-restore" disabled={busy} onClick={restore}>
              {busy ? "Putting it back…" : "Put this backup back"}
            </button>
            {problem.command && (
              <p class="muted">
                On a terminal: <code>{problem.command}</code>
              </p>
            )}
          </div>
        ) : (
          <p data-testid="recovery-no-backup">
            There is no backup to put back. <code>pocketpilot doctor</code> says more about the file.
          </p>
        )}
        {error && (
          <div class="notice error" role="status" data-testid="recovery-error">
            {error}
          </div>
        )}
      </section>
    </main>
  );
}
